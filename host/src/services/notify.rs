//! The mails the API and the console send (account created, confirmation instructions),
//! through the one mailer of the process (SMTP or `.eml` files).

use crate::auth::secrets;
use crate::context::ApiContext;
use crate::mail::Mail;
use crate::tenants::Tenant;

/// A new confirmation token: the secret for the mail, and the digest to store.
pub fn confirmation_token() -> (String, String) {
    let token = secrets::generate("", 20);
    let digest = secrets::digest(&token);
    (token, digest)
}

pub async fn send_confirmation(
    ctx: &ApiContext,
    tenant: &Tenant,
    name: &str,
    email: &str,
    token: &str,
) {
    let link = format!(
        "{}/users/confirmation?confirmation_token={token}",
        tenant.base_url
    );
    send(
        ctx,
        email,
        "Confirmation instructions",
        format!("Welcome, {name}!\n\nYou can confirm your email ({email}) through the link below:\n\n{link}\n"),
    )
    .await;
}

/// Sends a mail. The change that caused it is already stored, so a mail that cannot be
/// delivered (an address the mail library refuses, a relay that is down) is logged as an
/// error rather than turned into a failed request.
pub async fn send(ctx: &ApiContext, to: &str, subject: &str, body: String) {
    if let Err(error) = ctx.mailer.send(Mail { to, subject, body }).await {
        tracing::error!(
            error = format!("{error:#}"),
            subject,
            "could not send a mail"
        );
    }
}
