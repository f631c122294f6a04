//! A certificate authority for the tests' TLS servers (registries, kube-apiserver, webhooks,
//! served stacks), and the server certificates it signs.

use std::net::IpAddr;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};

/// A CA: its certificate as PEM, and what signs with it.
pub struct TestCa {
    /// The CA certificate, PEM.
    pub pem: String,
    issuer: Issuer<'static, KeyPair>,
}

/// A server certificate and its key, PEM.
pub struct ServerCert {
    pub cert: String,
    pub key: String,
}

impl TestCa {
    /// A new CA named `common_name`.
    pub fn new(common_name: &str) -> Result<Self, rcgen::Error> {
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params
            .distinguished_name
            .push(DnType::CommonName, common_name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let pem = params.self_signed(&key)?.pem();
        Ok(Self {
            pem,
            issuer: Issuer::new(params, key),
        })
    }

    /// A server certificate for `names` and `ips`, named `common_name` when given.
    pub fn server(
        &self,
        names: &[&str],
        ips: &[IpAddr],
        common_name: Option<&str>,
    ) -> Result<ServerCert, rcgen::Error> {
        let key = KeyPair::generate()?;
        let mut params =
            CertificateParams::new(names.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>())?;
        params
            .subject_alt_names
            .extend(ips.iter().map(|ip| SanType::IpAddress(*ip)));
        if let Some(cn) = common_name {
            params.distinguished_name.push(DnType::CommonName, cn);
        }
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let cert = params.signed_by(&key, &self.issuer)?.pem();
        Ok(ServerCert {
            cert,
            key: key.serialize_pem(),
        })
    }

    /// A client certificate named `common_name` (mutual TLS).
    pub fn client(&self, common_name: &str) -> Result<ServerCert, rcgen::Error> {
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params
            .distinguished_name
            .push(DnType::CommonName, common_name);
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let cert = params.signed_by(&key, &self.issuer)?.pem();
        Ok(ServerCert {
            cert,
            key: key.serialize_pem(),
        })
    }

    /// A server certificate for `localhost` and 127.0.0.1.
    pub fn localhost(&self, common_name: Option<&str>) -> Result<ServerCert, rcgen::Error> {
        self.server(&["localhost"], &[[127, 0, 0, 1].into()], common_name)
    }
}
