"""TLS for a listener (:mod:`sluice.broker.security.tls`): contexts made from Kafka's ``ssl.*``
keys serve real TLS handshakes over loopback (certificates made here with ``trustme``), a
client certificate becomes the principal through ``ssl.principal.mapping.rules`` as Kafka maps
it, and every bad key is refused with a message naming it."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme

from sluice.broker.security.tls import (
    ANONYMOUS,
    PrincipalMapper,
    TlsConfigError,
    peer_principal,
    server_context,
)
from sluice.broker.security.tls import client_context as broker_client_context
from sluice.cipher_suites import restrict


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture(scope="module")
def server_pem(ca: trustme.CA, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("tls") / "server.pem"
    ca.issue_cert("127.0.0.1", "localhost").private_key_and_cert_chain_pem.write_to_path(path)
    yield path


def connection(
    context: ssl.SSLContext, client: ssl.SSLContext, mapper: PrincipalMapper | None = None
) -> tuple[str, str, str]:
    """One TLS connection over loopback: the principal the server sees, and the suite and TLS
    version agreed on (or the handshake's error, raised)."""

    async def run() -> tuple[str, str, str]:
        seen: asyncio.Future[str] = asyncio.get_running_loop().create_future()

        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            ssl_object = writer.get_extra_info("ssl_object")
            if not seen.done():
                seen.set_result(peer_principal(ssl_object, mapper or PrincipalMapper()))
            writer.write(b"ok")
            await writer.drain()
            writer.close()

        server = await asyncio.start_server(serve, "127.0.0.1", 0, ssl=context)
        port = server.sockets[0].getsockname()[1]
        try:
            reader, writer = await asyncio.open_connection(
                "127.0.0.1", port, ssl=client, server_hostname="127.0.0.1"
            )
            suite, version, _ = writer.get_extra_info("cipher")
            answered = await reader.read(2)
            writer.close()
            if answered != b"ok":  # TLS 1.3 refuses a client certificate after the handshake
                raise ConnectionResetError("the server closed the connection")
            return await asyncio.wait_for(seen, 5), suite, version
        finally:
            server.close()
            await server.wait_closed()

    return asyncio.run(run())


def handshake(
    context: ssl.SSLContext, client: ssl.SSLContext, mapper: PrincipalMapper | None = None
) -> str:
    """The principal the server sees of one connection."""
    return connection(context, client, mapper)[0]


def negotiated(context: ssl.SSLContext, client: ssl.SSLContext) -> tuple[str, str]:
    """The suite and TLS version of one connection."""
    _, suite, version = connection(context, client)
    return suite, version


def client_context(ca: trustme.CA, cert: trustme.LeafCert | None = None) -> ssl.SSLContext:
    context = ssl.create_default_context()
    ca.configure_trust(context)
    if cert is not None:
        cert.configure_cert(context)
    return context


def test_a_pem_keystore_file_serves_tls(ca: trustme.CA, server_pem: Path) -> None:
    context = server_context({"ssl.keystore.location": str(server_pem)})
    assert handshake(context, client_context(ca)) == ANONYMOUS  # no client certificate


def test_inline_pem_and_tls13_only(ca: trustme.CA) -> None:
    leaf = ca.issue_cert("127.0.0.1")
    context = server_context(
        {
            "ssl.keystore.type": "PEM",
            "ssl.keystore.key": leaf.private_key_pem.bytes().decode(),
            "ssl.keystore.certificate.chain": "".join(
                blob.bytes().decode() for blob in leaf.cert_chain_pems
            ),
            "ssl.enabled.protocols": "TLSv1.3",
        }
    )
    assert context.minimum_version == ssl.TLSVersion.TLSv1_3
    tls12_client = client_context(ca)
    tls12_client.maximum_version = ssl.TLSVersion.TLSv1_2
    with pytest.raises((ssl.SSLError, ConnectionError)):
        handshake(context, tls12_client)
    assert handshake(context, client_context(ca)) == ANONYMOUS


def test_cipher_suites_are_exactly_the_ones_negotiated(ca: trustme.CA, server_pem: Path) -> None:
    """``ssl.cipher.suites`` by standard names: TLS 1.3 and TLS 1.2 suites (the certificate's
    key is ECDSA), a client offering only others is refused, one version alone turns the other
    off."""
    both = [ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3]
    tls12 = [ssl.TLSVersion.TLSv1_2]
    pem = str(server_pem)
    aes128 = server_context(
        {
            "ssl.keystore.location": pem,
            "ssl.cipher.suites": "TLS_AES_128_GCM_SHA256,TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
        }
    )
    # a default client prefers TLS_AES_256_GCM_SHA384: the server's list decides
    assert negotiated(aes128, client_context(ca)) == ("TLS_AES_128_GCM_SHA256", "TLSv1.3")
    only_256 = client_context(ca)
    restrict(only_256, ["TLS_AES_256_GCM_SHA384"], both)
    with pytest.raises((ssl.SSLError, ConnectionError)):
        negotiated(aes128, only_256)
    old_client = client_context(ca)
    restrict(old_client, ["TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"], tls12)
    assert negotiated(aes128, old_client) == ("ECDHE-ECDSA-AES128-GCM-SHA256", "TLSv1.2")
    old_256 = client_context(ca)
    restrict(old_256, ["TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"], tls12)
    with pytest.raises((ssl.SSLError, ConnectionError)):
        negotiated(aes128, old_256)
    # TLS 1.2 suites only: TLS 1.3 is off, whatever the client prefers
    tls12_only = server_context(
        {
            "ssl.keystore.location": pem,
            "ssl.cipher.suites": "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
        }
    )
    assert negotiated(tls12_only, client_context(ca)) == (
        "ECDHE-ECDSA-AES256-GCM-SHA384",
        "TLSv1.2",
    )
    with pytest.raises((ssl.SSLError, ConnectionError)):
        negotiated(tls12_only, old_client)
    # a broker's own connections to another broker's TLS listener take the key too
    towards = broker_client_context(
        {
            "ssl.truststore.certificates": ca.cert_pem.bytes().decode(),
            "ssl.cipher.suites": "TLS_CHACHA20_POLY1305_SHA256",
        }
    )
    plain = server_context({"ssl.keystore.location": pem})
    assert negotiated(plain, towards) == ("TLS_CHACHA20_POLY1305_SHA256", "TLSv1.3")


def test_a_broker_checks_the_other_brokers_host_name_unless_told_not_to(
    ca: trustme.CA, tmp_path: Path
) -> None:
    """``ssl.endpoint.identification.algorithm`` on a broker's connections to another: ``https``
    (Kafka's default) refuses a certificate for another name; empty accepts it, but still only
    from a trusted CA."""
    elsewhere = tmp_path / "elsewhere.pem"
    ca.issue_cert("broker-9.example").private_key_and_cert_chain_pem.write_to_path(elsewhere)
    server = server_context({"ssl.keystore.location": str(elsewhere)})
    trust = {"ssl.truststore.certificates": ca.cert_pem.bytes().decode()}
    with pytest.raises(ssl.SSLCertVerificationError, match="IP address mismatch"):
        negotiated(server, broker_client_context(trust))
    unchecked = broker_client_context({**trust, "ssl.endpoint.identification.algorithm": ""})
    assert negotiated(server, unchecked)[1] == "TLSv1.3"
    stranger = {
        "ssl.truststore.certificates": trustme.CA().cert_pem.bytes().decode(),
        "ssl.endpoint.identification.algorithm": "",
    }
    with pytest.raises(ssl.SSLCertVerificationError, match="unable to get local issuer"):
        negotiated(server, broker_client_context(stranger))
    with pytest.raises(TlsConfigError, match=r"https \(check the host name\) or empty"):
        broker_client_context({**trust, "ssl.endpoint.identification.algorithm": "ldap"})


def test_mtls_principal_through_the_mapping_rules(ca: trustme.CA, server_pem: Path) -> None:
    context = server_context(
        {
            "ssl.keystore.location": str(server_pem),
            "ssl.truststore.certificates": ca.cert_pem.bytes().decode(),
            "ssl.client.auth": "required",
        }
    )
    writer = ca.issue_cert("writer@example.com", common_name="Writer", organization_name="Acme")
    mapper = PrincipalMapper("RULE:^CN=([^,]*),.*O=Acme$/$1/L,DEFAULT")
    assert handshake(context, client_context(ca, writer), mapper) == "User:writer"
    default = handshake(context, client_context(ca, writer))
    assert default.startswith("User:CN=Writer,OU=") and default.endswith(",O=Acme")
    with pytest.raises((ssl.SSLError, ConnectionError)):  # required: no certificate, no entry
        handshake(context, client_context(ca))
    stranger = trustme.CA().issue_cert("x@example.com", common_name="Stranger")
    with pytest.raises((ssl.SSLError, ConnectionError)):
        handshake(context, client_context(ca, stranger))


def test_requested_client_auth_takes_a_certificate_when_shown(
    ca: trustme.CA, server_pem: Path
) -> None:
    context = server_context(
        {
            "ssl.keystore.location": str(server_pem),
            "ssl.truststore.certificates": ca.cert_pem.bytes().decode(),
            "ssl.client.auth": "requested",
        }
    )
    assert handshake(context, client_context(ca)) == ANONYMOUS
    reader = ca.issue_cert("r@example.com", common_name="reader")
    assert handshake(context, client_context(ca, reader)).startswith("User:CN=reader,")


@pytest.mark.parametrize(
    "rules, dn, name",
    [
        ("DEFAULT", "CN=a,O=b", "CN=a,O=b"),
        ("RULE:^CN=(.*?),OU=(.*?),O=(.*?)$/$1@$2/U", "CN=Duke,OU=Sales,O=Acme", "DUKE@SALES"),
        ("RULE:^CN=(.*?),.*$/$1/, DEFAULT", "OU=x,CN=y", "OU=x,CN=y"),  # first rule fails
        ("RULE:^CN=(.*)$/$12/", "CN=ab", "ab2"),  # $12 with one group: $1 then "2"
        ("RULE:^CN=(.*)$/$4-$1/", "CN=ab", "$4-ab"),  # no group 4: literal, as Kafka keeps it
        ("RULE:^CN=(.*)$/\\$1/", "CN=ab", "$1"),  # an escaped $
        ("RULE:^(.*)$/x,y/,DEFAULT", "CN=ab", "x,y"),  # a comma in a replacement
    ],
)
def test_principal_mapping_rules_as_kafka_applies_them(rules: str, dn: str, name: str) -> None:
    assert PrincipalMapper(rules).name(dn) == name


def test_principal_mapping_mistakes() -> None:
    with pytest.raises(ValueError, match="No rules apply to CN=a"):
        PrincipalMapper("RULE:^OU=.*$/x/").name("CN=a")
    with pytest.raises(ValueError, match="invalid rule"):
        PrincipalMapper("RULE:^CN=(.*)$/$1/X")
    with pytest.raises(ValueError, match="invalid rule"):
        PrincipalMapper("NONSENSE")


@pytest.mark.parametrize(
    "keys, message",
    [
        ({"ssl.keystore.type": "JKS", "ssl.keystore.location": "k.jks"}, "ssl.keystore.type"),
        ({}, "ssl.keystore.location"),
        ({"ssl.keystore.location": "/nonexistent.pem"}, "cannot load /nonexistent.pem"),
        ({"ssl.keystore.location": "PEM", "ssl.client.auth": "sometimes"}, "ssl.client.auth"),
        ({"ssl.keystore.location": "PEM", "ssl.client.auth": "required"}, "ssl.truststore"),
        ({"ssl.keystore.location": "PEM", "ssl.enabled.protocols": "TLSv1.1"}, "protocols"),
        (
            {"ssl.keystore.location": "PEM", "ssl.cipher.suites": "TLS_AES_128_GCM_SHA256,TLS_X"},
            "ssl.cipher.suites: unknown cipher suite TLS_X",
        ),
        (
            {
                "ssl.keystore.location": "PEM",
                "ssl.enabled.protocols": "TLSv1.2",
                "ssl.cipher.suites": "TLS_AES_128_GCM_SHA256",
            },
            "ssl.cipher.suites: names only TLSv1.3 suites, and ssl.enabled.protocols allows "
            "TLSv1.2",
        ),
    ],
)
def test_bad_keys_are_named(server_pem: Path, keys: dict[str, str], message: str) -> None:
    """``PEM`` stands for a good keystore file, so that only the key under test is wrong."""
    keys = {k: str(server_pem) if v == "PEM" else v for k, v in keys.items()}
    with pytest.raises(TlsConfigError, match=message):
        server_context(keys)
