//! Test fixture: a spam-check plugin that opens a TCP connection (Rust's standard library
//! imports wasi:sockets for it). Plugins reach the network only through `outbound-http`, so
//! the host refuses the upload.

use serde::Deserialize;
use trellis_sdk::spam_check::{Input, SpamCheck, Verdict};

#[derive(Debug, Default, Deserialize)]
pub struct Config {}

pub struct Forbidden;

impl SpamCheck for Forbidden {
    type Config = Config;

    fn check(_config: &Config, _input: &Input) -> Result<Verdict, String> {
        match std::net::TcpStream::connect("127.0.0.1:9") {
            Ok(_) => Ok(Verdict::allow("connected")),
            Err(e) => Ok(Verdict::allow(e.to_string())),
        }
    }
}

trellis_sdk::export_spam_check!(Forbidden);
