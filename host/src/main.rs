//! The `trellis` binary; what it does is `trellis::cli`.

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> anyhow::Result<()> {
    trellis::cli::main()
}
