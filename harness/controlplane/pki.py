"""The control plane's certificates and keys, made fresh for each start with ``cryptography``.

One CA signs everything: the apiserver's serving certificate (SANs as kubeadm gives them: 127.0.0.1, localhost,
``kubernetes``, ``kubernetes.default``, ``kubernetes.default.svc``, the Service range's first address), client
certificates (an admin in ``system:masters``, each controller's identity, the apiserver's client for the node's
kubelet port), kwok's serving certificate, and one RSA key pair that signs and verifies ServiceAccount tokens.
Kubernetes reads a client certificate's CN as the user name and each O as a group (Kubernetes docs,
"Authenticating: X509 client certificates").
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALID_FOR = datetime.timedelta(days=2)
"""How long each certificate is valid: a control plane lives for one run."""


@dataclass(frozen=True)
class Pair:
    """A certificate and its key, as PEM files."""

    cert: Path
    key: Path


@dataclass(frozen=True)
class Pki:
    """Every file a start needs, under one folder."""

    ca: Pair
    serving: Pair
    admin: Pair
    kubelet_client: Pair
    kwok_serving: Pair
    controller_manager: Pair
    scheduler: Pair
    kwok: Pair
    service_account: Pair  # ``cert`` holds the public key, ``key`` the private key


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> None:
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    path.write_bytes(pem)
    path.chmod(0o600)


def _name(common: str, groups: tuple[str, ...] = ()) -> x509.Name:
    parts = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, g) for g in groups]
    return x509.Name([*parts, x509.NameAttribute(NameOID.COMMON_NAME, common)])


class _Authority:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.key = _key()
        now = datetime.datetime.now(datetime.UTC)
        self.name = _name("stack-harness control plane CA")
        self.cert = (
            x509.CertificateBuilder()
            .subject_name(self.name)
            .issuer_name(self.name)
            .public_key(self.key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + VALID_FOR)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
            )  # keyCertSign, cRLSign
            .sign(self.key, hashes.SHA256())
        )
        self.pair = self._write("ca", self.cert, self.key)

    def _write(self, stem: str, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey) -> Pair:
        pair = Pair(self.folder / f"{stem}.crt", self.folder / f"{stem}.key")
        pair.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        _write_key(pair.key, key)
        return pair

    def issue(
        self, stem: str, common: str, *, groups: tuple[str, ...] = (), hosts: tuple[str, ...] = (), server: bool
    ) -> Pair:
        key = _key()
        now = datetime.datetime.now(datetime.UTC)
        usage = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(common, groups))
            .issuer_name(self.name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + VALID_FOR)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        )
        if hosts:
            builder = builder.add_extension(x509.SubjectAlternativeName([_san(h) for h in hosts]), critical=False)
        return self._write(stem, builder.sign(self.key, hashes.SHA256()), key)


def _san(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def make_pki(folder: Path, *, service_ip: str) -> Pki:
    """Write a fresh CA and every certificate under ``folder`` (which must exist); ``service_ip`` is the first
    address of the Service range (the ``kubernetes`` Service's ClusterIP, a SAN of the serving certificate)."""
    ca = _Authority(folder)
    hosts = ("127.0.0.1", "localhost", service_ip, "kubernetes", "kubernetes.default", "kubernetes.default.svc")
    sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    sa = Pair(folder / "service-account.pub", folder / "service-account.key")
    _write_key(sa.key, sa_key)
    sa.cert.write_bytes(
        sa_key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    return Pki(
        ca=ca.pair,
        serving=ca.issue("apiserver", "kube-apiserver", hosts=hosts, server=True),
        admin=ca.issue("admin", "stack-harness-admin", groups=("system:masters",), server=False),
        kubelet_client=ca.issue(
            "apiserver-kubelet-client", "kube-apiserver-kubelet-client", groups=("system:masters",), server=False
        ),
        kwok_serving=ca.issue("kwok-serving", "kwok", hosts=("127.0.0.1", "localhost"), server=True),
        controller_manager=ca.issue("controller-manager", "system:kube-controller-manager", server=False),
        scheduler=ca.issue("scheduler", "system:kube-scheduler", server=False),
        # kwok writes Node and Pod status and Node leases for many nodes: an admin, as kwokctl runs it.
        kwok=ca.issue("kwok-controller", "kwok-controller", groups=("system:masters",), server=False),
        service_account=sa,
    )
