//! The `trellis` binary; what it does is `trellis::cli`.

fn main() -> anyhow::Result<()> {
    trellis::cli::main()
}
