"""A throwaway certificate authority and serving certificate, for a double served over https.

Why a double may need TLS at all: client-go (so kubectl) applies a kubeconfig user's credentials only when the
transport is TLS (``clientcmd``'s ``ClientConfig`` merges the user's auth settings under ``isConfigTransportTLS``),
so over ``http://`` kubectl never sends the bearer token, whatever the kubeconfig or ``--token`` say (measured
with kubectl 1.32: no ``Authorization`` header at all). A double that must see kubectl's token, or answer it a
401, serves https with this CA in the kubeconfig's ``certificate-authority-data``.

Keys are ECDSA P-256, the CA and leaf are valid from one hour before the host's now to one day after it (clients
check validity against the host clock, not the double's). Nothing touches the disk except
:func:`ssl_context`'s private temporary files, removed before it returns.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import ssl
import tempfile
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class Certificates:
    """PEM bytes: the CA certificate (for clients), the serving certificate and its private key."""

    ca_pem: bytes
    cert_pem: bytes
    key_pem: bytes


def generate(host: str = "127.0.0.1") -> Certificates:
    """A fresh CA and a serving certificate for ``host`` (an IP address or a DNS name) and ``localhost``."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "fake-kube-ca")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = [x509.DNSName("localhost")]
    try:
        names.append(x509.IPAddress(ipaddress.ip_address(host.strip("[]"))))
    except ValueError:
        names.append(x509.DNSName(host))
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "fake-kube-apiserver")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    return Certificates(
        ca_pem=ca.public_bytes(pem),
        cert_pem=cert.public_bytes(pem),
        key_pem=key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()),
    )


def ssl_context(certs: Certificates) -> ssl.SSLContext:
    """A server-side context serving ``certs`` (``load_cert_chain`` needs files: written 0600, then removed)."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    with tempfile.TemporaryDirectory(prefix="fake-kube-tls-") as tmp:
        cert_path, key_path = os.path.join(tmp, "tls.crt"), os.path.join(tmp, "tls.key")
        for path, data in ((cert_path, certs.cert_pem), (key_path, certs.key_pem)):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
        context.load_cert_chain(cert_path, key_path)
    return context
