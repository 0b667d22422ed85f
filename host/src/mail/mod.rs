//! The mails GitLab would send (password reset, email confirmation) go through one mailer:
//! SMTP when `--smtp-url` is set, otherwise `.eml` files under `DATA_DIR/mail/`, so that no
//! mail is silently dropped.

use std::path::PathBuf;

use anyhow::Context;
use lettre::message::header::ContentType;
use lettre::{AsyncFileTransport, AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};

pub enum Mailer {
    Smtp {
        transport: AsyncSmtpTransport<Tokio1Executor>,
        from: String,
    },
    Files {
        transport: AsyncFileTransport<Tokio1Executor>,
        from: String,
    },
}

pub struct Mail<'a> {
    pub to: &'a str,
    pub subject: &'a str,
    pub body: String,
}

impl Mailer {
    /// `smtp_url` like `smtp://relay.example:25` (plain SMTP to a trusted relay).
    pub fn new(
        smtp_url: Option<&str>,
        data_dir: &std::path::Path,
        from: &str,
    ) -> anyhow::Result<Mailer> {
        let from = from.to_string();
        match smtp_url {
            Some(url) => {
                let parsed =
                    url::Url::parse(url).with_context(|| format!("invalid SMTP URL {url:?}"))?;
                anyhow::ensure!(
                    parsed.scheme() == "smtp",
                    "the SMTP URL must be smtp://host[:port]"
                );
                let host = parsed.host_str().context("the SMTP URL has no host")?;
                let transport = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(host)
                    .port(parsed.port().unwrap_or(25))
                    .build();
                Ok(Mailer::Smtp { transport, from })
            }
            None => {
                let dir: PathBuf = data_dir.join("mail");
                std::fs::create_dir_all(&dir)
                    .with_context(|| format!("creating {}", dir.display()))?;
                Ok(Mailer::Files {
                    transport: AsyncFileTransport::new(dir),
                    from,
                })
            }
        }
    }

    pub async fn send(&self, mail: Mail<'_>) -> anyhow::Result<()> {
        let from = match self {
            Mailer::Smtp { from, .. } | Mailer::Files { from, .. } => from,
        };
        let message = Message::builder()
            .from(from.parse().context("invalid sender address")?)
            .to(mail
                .to
                .parse()
                .with_context(|| format!("invalid recipient {}", mail.to))?)
            .subject(mail.subject)
            .header(ContentType::TEXT_PLAIN)
            .body(mail.body)?;
        match self {
            Mailer::Smtp { transport, .. } => {
                transport.send(message).await?;
            }
            Mailer::Files { transport, .. } => {
                transport.send(message).await?;
            }
        }
        Ok(())
    }
}
