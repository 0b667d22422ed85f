//! TLS for outbound HTTPS: the system's trust roots (rustls-native-certs, so `SSL_CERT_FILE` /
//! `SSL_CERT_DIR` replace them, which is how operators trust a private CA) and, for a service
//! that asks for one, a client certificate from PEM settings (GitLab's
//! `external_auth_client_cert`, `_key`, `_key_pass`).
//!
//! A configuration that cannot be used (unreadable PEM, wrong passphrase, an encryption
//! format we do not read) is kept as its error and refuses every HTTPS request made with it,
//! so a broken client certificate fails closed instead of connecting without one.

use std::sync::{Arc, OnceLock};

use rustls::client::ClientConfig;
use rustls::{RootCertStore, crypto::ring};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

/// How HTTPS connections are made: trusted roots and an optional client certificate.
#[derive(Clone)]
pub struct Tls(Result<Arc<ClientConfig>, String>);

impl Tls {
    /// The system's trust roots, no client certificate (loaded once per process).
    pub fn system() -> Tls {
        static SYSTEM: OnceLock<Tls> = OnceLock::new();
        SYSTEM
            .get_or_init(|| Tls(system_roots().and_then(|roots| config(roots, None))))
            .clone()
    }

    /// The system's trust roots and the client certificate chain `cert_pem` with its private
    /// key `key_pem`, decrypted with `passphrase` when it is an `ENCRYPTED PRIVATE KEY`.
    pub fn with_client_certificate(cert_pem: &str, key_pem: &str, passphrase: &str) -> Tls {
        Tls(system_roots().and_then(|roots| {
            let identity = identity(cert_pem, key_pem, passphrase)?;
            config(roots, Some(identity))
        }))
    }

    /// No verification of the server's certificate: a webhook with
    /// `enable_ssl_verification` off, as in GitLab. The connection is still encrypted.
    pub fn unverified() -> Tls {
        static UNVERIFIED: OnceLock<Tls> = OnceLock::new();
        UNVERIFIED
            .get_or_init(|| {
                let provider = Arc::new(ring::default_provider());
                Tls(ClientConfig::builder_with_provider(provider.clone())
                    .with_safe_default_protocol_versions()
                    .map_err(|e| format!("TLS is unavailable: {e}"))
                    .map(|builder| {
                        Arc::new(
                            builder
                                .dangerous()
                                .with_custom_certificate_verifier(Arc::new(AnyCertificate(
                                    provider,
                                )))
                                .with_no_client_auth(),
                        )
                    }))
            })
            .clone()
    }

    /// Runs the TLS handshake over `stream` for `host` (the URL's host name: it is both the
    /// SNI and the name the server certificate must be valid for).
    pub(crate) async fn connect(
        &self,
        host: &str,
        stream: TcpStream,
    ) -> Result<TlsStream<TcpStream>, String> {
        let config = self.0.clone()?;
        let name = ServerName::try_from(host.trim_start_matches('[').trim_end_matches(']'))
            .map_err(|_| format!("{host:?} is not a valid TLS server name"))?
            .to_owned();
        TlsConnector::from(config)
            .connect(name, stream)
            .await
            .map_err(|e| format!("TLS handshake failed: {e}"))
    }

    /// The error this configuration refuses requests with, if any.
    pub fn error(&self) -> Option<&str> {
        self.0.as_ref().err().map(String::as_str)
    }
}

type Identity = (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>);

/// Accepts any server certificate (signatures are still checked, so the handshake is sound).
#[derive(Debug)]
struct AnyCertificate(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: rustls_pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

fn system_roots() -> Result<Arc<RootCertStore>, String> {
    static ROOTS: OnceLock<Result<Arc<RootCertStore>, String>> = OnceLock::new();
    ROOTS
        .get_or_init(|| {
            let found = rustls_native_certs::load_native_certs();
            for error in &found.errors {
                tracing::warn!(%error, "could not read trusted root certificates");
            }
            let mut roots = RootCertStore::empty();
            let (added, _) = roots.add_parsable_certificates(found.certs);
            if added == 0 {
                return Err("no trusted root certificates were found (see SSL_CERT_FILE)".into());
            }
            Ok(Arc::new(roots))
        })
        .clone()
}

fn config(
    roots: Arc<RootCertStore>,
    identity: Option<Identity>,
) -> Result<Arc<ClientConfig>, String> {
    let builder = ClientConfig::builder_with_provider(Arc::new(ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS is unavailable: {e}"))?
        .with_root_certificates(roots);
    let config = match identity {
        None => builder.with_no_client_auth(),
        Some((chain, key)) => builder
            .with_client_auth_cert(chain, key)
            .map_err(|e| format!("the client certificate cannot be used: {e}"))?,
    };
    Ok(Arc::new(config))
}

/// The certificate chain and key from PEM text.
fn identity(cert_pem: &str, key_pem: &str, passphrase: &str) -> Result<Identity, String> {
    let chain = CertificateDer::pem_slice_iter(cert_pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("the client certificate is not valid PEM: {e}"))?;
    if chain.is_empty() {
        return Err("the client certificate has no CERTIFICATE block".into());
    }
    Ok((chain, private_key(key_pem, passphrase)?))
}

/// The private key: plain PKCS#8, PKCS#1 or SEC1, or PKCS#8 encrypted with `passphrase`.
/// OpenSSL's traditional encryption (`Proc-Type: 4,ENCRYPTED` headers, MD5-derived keys) is
/// refused: the key has to be converted (`openssl pkcs8 -topk8`).
fn private_key(pem: &str, passphrase: &str) -> Result<PrivateKeyDer<'static>, String> {
    if pem.contains("Proc-Type:") && pem.contains("ENCRYPTED") {
        return Err(
            "the client key uses OpenSSL's traditional encryption (Proc-Type: \
                    4,ENCRYPTED), which is not supported: convert it to an encrypted PKCS#8 \
                    key (openssl pkcs8 -topk8)"
                .into(),
        );
    }
    if pem.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----") {
        if passphrase.is_empty() {
            return Err("the client key is encrypted and no passphrase is set".into());
        }
        let (_, document) = pkcs8::Document::from_pem(pem.trim())
            .map_err(|e| format!("the encrypted client key is not valid PEM: {e}"))?;
        let info = pkcs8::EncryptedPrivateKeyInfo::try_from(document.as_bytes())
            .map_err(|e| format!("the encrypted client key cannot be read: {e}"))?;
        let plain = info
            .decrypt(passphrase)
            .map_err(|_| "the client key cannot be decrypted: wrong passphrase".to_string())?;
        return Ok(PrivatePkcs8KeyDer::from(plain.as_bytes().to_vec()).into());
    }
    PrivateKeyDer::from_pem_slice(pem.as_bytes())
        .map_err(|e| format!("the client key is not a valid PEM private key: {e}"))
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use rustls::server::{ServerConfig, WebPkiClientVerifier};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    pub(crate) const CA: &str = include_str!("testdata/ca.pem");
    pub(crate) const SERVER: &str = include_str!("testdata/server.pem");
    pub(crate) const SERVER_KEY: &str = include_str!("testdata/server-key.pem");
    pub(crate) const CLIENT: &str = include_str!("testdata/client.pem");
    pub(crate) const CLIENT_KEY: &str = include_str!("testdata/client-key.pem");
    /// `CLIENT_KEY` as encrypted PKCS#8 (PBES2, AES-256-CBC) with the passphrase `hunter2`.
    pub(crate) const CLIENT_KEY_ENCRYPTED: &str = include_str!("testdata/client-key-encrypted.pem");
    /// `CLIENT_KEY` with OpenSSL's traditional encryption, passphrase `hunter2`.
    const CLIENT_KEY_TRADITIONAL: &str = include_str!("testdata/client-key-traditional.pem");

    fn test_roots() -> Arc<RootCertStore> {
        let mut roots = RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(CA.as_bytes()) {
            roots.add(cert.unwrap()).unwrap();
        }
        Arc::new(roots)
    }

    /// Trusts the test CA only (the system roots in `Tls::system` cannot be changed here).
    pub(crate) fn test_tls(client: Option<(&str, &str, &str)>) -> Tls {
        Tls((|| {
            let identity = client
                .map(|(cert, key, pass)| identity(cert, key, pass))
                .transpose()?;
            config(test_roots(), identity)
        })())
    }

    /// A one-shot HTTPS server on loopback (certificate for localhost and 127.0.0.1) that
    /// answers 200 with the client certificate's presence in the body; `require_client`
    /// makes it refuse handshakes without a certificate from the test CA.
    pub(crate) async fn serve_tls(require_client: bool) -> u16 {
        let provider = Arc::new(ring::default_provider());
        let builder = ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .unwrap();
        let builder = if require_client {
            let verifier = WebPkiClientVerifier::builder_with_provider(test_roots(), provider)
                .build()
                .unwrap();
            builder.with_client_cert_verifier(verifier)
        } else {
            builder.with_no_client_auth()
        };
        let chain = CertificateDer::pem_slice_iter(SERVER.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        let key = PrivateKeyDer::from_pem_slice(SERVER_KEY.as_bytes()).unwrap();
        let config = builder.with_single_cert(chain, key).unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            let (socket, _) = listener.accept().await.unwrap();
            let Ok(mut stream) = acceptor.accept(socket).await else {
                return;
            };
            let mut buf = vec![0; 4096];
            let _ = stream.read(&mut buf).await;
            let presented = stream.get_ref().1.peer_certificates().is_some();
            let body = if presented { "client" } else { "anonymous" };
            let reply = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(reply.as_bytes()).await;
            let _ = stream.shutdown().await;
        });
        port
    }

    #[test]
    fn keys_parse_or_are_refused_clearly() {
        assert!(identity(CLIENT, CLIENT_KEY, "").is_ok());
        assert!(identity(CLIENT, CLIENT_KEY, "ignored when not encrypted").is_ok());
        assert!(identity(CLIENT, CLIENT_KEY_ENCRYPTED, "hunter2").is_ok());
        for (key, pass, expected) in [
            (CLIENT_KEY_ENCRYPTED, "wrong", "wrong passphrase"),
            (CLIENT_KEY_ENCRYPTED, "", "no passphrase is set"),
            (CLIENT_KEY_TRADITIONAL, "hunter2", "traditional encryption"),
            ("not a key", "", "not a valid PEM private key"),
        ] {
            let error = identity(CLIENT, key, pass).unwrap_err();
            assert!(error.contains(expected), "{error}");
        }
        let error = identity("nothing", CLIENT_KEY, "").unwrap_err();
        assert!(error.contains("no CERTIFICATE block"), "{error}");
        // A key that does not belong to the certificate.
        let error = test_tls(Some((CLIENT, SERVER_KEY, "")))
            .error()
            .map(str::to_string);
        assert!(error.is_some_and(|e| e.contains("cannot be used")));
    }

    async fn handshake(tls: &Tls, host: &str, port: u16) -> Result<String, String> {
        let stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        let mut stream = tls.connect(host, stream).await?;
        stream
            .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .map_err(|e| e.to_string())?;
        let mut answer = String::new();
        stream
            .read_to_string(&mut answer)
            .await
            .map_err(|e| e.to_string())?;
        Ok(answer)
    }

    #[tokio::test]
    async fn server_names_and_trust() {
        let port = serve_tls(false).await;
        let answer = handshake(&test_tls(None), "localhost", port).await.unwrap();
        assert!(answer.ends_with("anonymous"), "{answer}");
        let port = serve_tls(false).await;
        assert!(handshake(&test_tls(None), "127.0.0.1", port).await.is_ok());
        // The certificate is checked against the name asked for, not the address connected to.
        let port = serve_tls(false).await;
        let error = handshake(&test_tls(None), "auth.example.com", port)
            .await
            .unwrap_err();
        assert!(error.contains("certificate"), "{error}");
        let untrusted = Tls(config(Arc::new(RootCertStore::empty()), None));
        let port = serve_tls(false).await;
        let error = handshake(&untrusted, "localhost", port).await.unwrap_err();
        assert!(error.contains("UnknownIssuer"), "{error}");
    }

    #[tokio::test]
    async fn client_certificates() {
        let port = serve_tls(true).await;
        let with = test_tls(Some((CLIENT, CLIENT_KEY_ENCRYPTED, "hunter2")));
        let answer = handshake(&with, "localhost", port).await.unwrap();
        assert!(answer.ends_with("client"), "{answer}");
        // Without one, the server ends the handshake (TLS 1.3 reports it on the first read).
        let port = serve_tls(true).await;
        assert!(handshake(&test_tls(None), "localhost", port).await.is_err());
        // A client certificate that cannot be used refuses instead of connecting without it.
        let broken = test_tls(Some((CLIENT, CLIENT_KEY_ENCRYPTED, "wrong")));
        let port = serve_tls(false).await;
        let error = handshake(&broken, "localhost", port).await.unwrap_err();
        assert!(error.contains("wrong passphrase"), "{error}");
    }
}
