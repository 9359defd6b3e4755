//! TLS for the wire client (`pulsar+ssl://`), with rustls, as Pulsar's clients configure it:
//! the CAs of a trust file (`tlsTrustCertsFilePath`), a client certificate and key for mutual TLS
//! (`tlsCertificateFilePath`, `tlsKeyFilePath`), hostname verification on or off
//! (`tlsEnableHostnameVerification`, Pulsar's default off: the chain is still checked) and
//! `tlsAllowInsecureConnection` (no certificate checked; the handshake's signatures still are).
//!
//! The Python side reads the configuration (`connections.py`) and hands the file paths here; a
//! file that does not read or parse is an error that names it.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{CertificateError, ClientConfig, ClientConnection, DigitallySignedStruct, Error, SignatureScheme, StreamOwned};

/// How to check the broker's certificate, and which to show it.
#[derive(Clone, Debug, Default)]
pub struct TlsSettings {
    /// PEM file of the CAs to trust (None: no CA is trusted, unless `allow_insecure`).
    pub trust_file: Option<String>,
    /// PEM files of the client certificate (chain) and its key, for mutual TLS.
    pub certificate: Option<(String, String)>,
    pub verify_hostname: bool,
    pub allow_insecure: bool,
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The rustls configuration of `settings`, made once a client (its files read now).
pub fn client_config(settings: &TlsSettings) -> Result<Arc<ClientConfig>, String> {
    let provider = provider();
    let verifier: Arc<dyn ServerCertVerifier> = if settings.allow_insecure {
        Arc::new(Lenient { chain: None, provider: provider.clone() })
    } else {
        let mut roots = rustls::RootCertStore::empty();
        if let Some(path) = &settings.trust_file {
            let certificates = read_certificates(path, "tlsTrustCertsFilePath")?;
            let (added, _) = roots.add_parsable_certificates(certificates);
            if added == 0 {
                return Err(format!("tlsTrustCertsFilePath: {path} holds no CA certificate rustls can use"));
            }
        }
        let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
            .build()
            .map_err(|e| format!("tlsTrustCertsFilePath: no CA to trust ({e}): give one"))?;
        if settings.verify_hostname {
            webpki
        } else {
            Arc::new(Lenient { chain: Some(webpki), provider: provider.clone() })
        }
    };
    let builder = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    let config = match &settings.certificate {
        None => builder.with_no_client_auth(),
        Some((certificate, key)) => {
            let chain = read_certificates(certificate, "tlsCertificateFilePath")?;
            let key = PrivateKeyDer::from_pem_file(key)
                .map_err(|e| format!("tlsKeyFilePath: {key} holds no private key in PEM ({e})"))?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| format!("the client certificate {certificate} and its key do not go together: {e}"))?
        }
    };
    Ok(Arc::new(config))
}

fn read_certificates(path: &str, key: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let certificates = CertificateDer::pem_file_iter(path)
        .and_then(|found| found.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("{key}: cannot read certificates from {path}: {e}"))?;
    if certificates.is_empty() {
        return Err(format!("{key}: {path} holds no certificate in PEM"));
    }
    Ok(certificates)
}

/// A connection's byte stream: TCP, or TLS over TCP.
pub enum Stream {
    Plain(TcpStream),
    Tls(Box<StreamOwned<ClientConnection, TcpStream>>),
}

impl Stream {
    /// `socket` wrapped in TLS for `host` (its name, or its IP address), the handshake done
    /// within the socket's timeouts.
    pub fn tls(config: &Arc<ClientConfig>, host: &str, socket: TcpStream) -> Result<Self, String> {
        let name = ServerName::try_from(host.to_string()).map_err(|e| format!("{host}: not a host name: {e}"))?;
        let connection = ClientConnection::new(config.clone(), name).map_err(|e| e.to_string())?;
        let mut stream = StreamOwned::new(connection, socket);
        while stream.conn.is_handshaking() {
            stream.conn.complete_io(&mut stream.sock).map_err(|e| handshake_failure(host, e))?;
        }
        Ok(Self::Tls(Box::new(stream)))
    }

    pub fn socket(&self) -> &TcpStream {
        match self {
            Self::Plain(socket) => socket,
            Self::Tls(stream) => &stream.sock,
        }
    }

    pub fn shutdown(&mut self) {
        if let Self::Tls(stream) = self {
            stream.conn.send_close_notify();
            let _ = stream.conn.complete_io(&mut stream.sock);
        }
        let _ = self.socket().shutdown(Shutdown::Both);
    }
}

/// A failed handshake, said as what to check.
fn handshake_failure(host: &str, error: std::io::Error) -> String {
    let text = error.to_string();
    format!("the TLS handshake with {host} failed: {text}{}", hint(&text))
}

/// What to check, for a TLS failure rustls reports (empty for any other failure).
pub fn hint(text: &str) -> &'static str {
    if text.contains("UnknownIssuer") || text.contains("BadSignature") {
        " (its certificate is not signed by a CA of tlsTrustCertsFilePath)"
    } else if text.contains("NotValidForName") || text.contains("not valid for name") {
        " (its certificate does not name this host: tlsEnableHostnameVerification is on)"
    } else if text.contains("Expired") || text.contains("NotValidYet") {
        " (its certificate is out of its validity dates)"
    } else if text.contains("CertificateRequired") || text.contains("BadCertificate") || text.contains("UnknownCA") {
        " (the broker wants a client certificate of its CA: tlsCertificateFilePath and tlsKeyFilePath)"
    } else {
        ""
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Self::Plain(socket) => socket.read(buf),
            Self::Tls(stream) => stream.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Self::Plain(socket) => socket.write(buf),
            Self::Tls(stream) => stream.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Self::Plain(socket) => socket.flush(),
            Self::Tls(stream) => stream.flush(),
        }
    }
}

/// A verifier looser than webpki's as Pulsar's settings ask: the CA chain checked and the name
/// not (`tlsEnableHostnameVerification=false`, Pulsar's default; `chain`: webpki's verifier), or
/// no certificate checked (`tlsAllowInsecureConnection=true`; `chain` None). The handshake's
/// signatures are checked either way, with the key of the certificate shown.
#[derive(Debug)]
struct Lenient {
    chain: Option<Arc<WebPkiServerVerifier>>,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for Lenient {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        let Some(chain) = &self.chain else {
            return Ok(ServerCertVerified::assertion());
        };
        // webpki checks the chain first, and the name only of a chain it trusts
        match chain.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
            Err(Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        verify_tls12_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        verify_tls13_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::{client_config, TlsSettings};

    #[test]
    fn a_trust_file_that_does_not_read_is_named() {
        let settings = TlsSettings { trust_file: Some("/nowhere/ca.crt".into()), ..Default::default() };
        let failed = client_config(&settings).unwrap_err();
        assert!(failed.starts_with("tlsTrustCertsFilePath: cannot read certificates from /nowhere/ca.crt"), "{failed}");
    }

    #[test]
    fn a_trust_file_without_certificates_is_named() {
        let path = std::env::temp_dir().join(format!("pes-empty-{}.pem", std::process::id()));
        std::fs::write(&path, "not a certificate\n").unwrap();
        let settings = TlsSettings { trust_file: Some(path.display().to_string()), ..Default::default() };
        let failed = client_config(&settings).unwrap_err();
        std::fs::remove_file(&path).unwrap();
        assert!(failed.contains("holds no certificate in PEM"), "{failed}");
    }

    #[test]
    fn no_ca_at_all_is_an_error_unless_insecure() {
        assert!(client_config(&TlsSettings::default()).unwrap_err().contains("no CA to trust"));
        assert!(client_config(&TlsSettings { allow_insecure: true, ..Default::default() }).is_ok());
    }
}
