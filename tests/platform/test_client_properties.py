"""Kafka client properties files (``--command-config``) read and translated to librdkafka's keys:
the ``.properties`` format (Hypothesis writes files the way Java allows — escapes, continuations,
comments, each separator — and every property must come back with the line it starts on), the
JAAS login modules, the PEM stores, and errors that name the file, the line and the key."""

from __future__ import annotations

from pathlib import Path

import pytest
import trustme
from hypothesis import given, settings
from hypothesis import strategies as st

from sluice.client_properties import load_client_properties, parse_jaas, read_entries, translate
from sluice.errors import ConfigError

SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"
PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
OAUTH = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"

# ---- the .properties format -------------------------------------------------------------------


def _escape(text: str, *, key: bool) -> str:
    r"""``text`` written as Java's ``Properties.store`` would: ``\``, separators, comment
    characters and line breaks escaped; a leading space escaped in a value (else trimmed)."""
    out = []
    for i, char in enumerate(text):
        if char == "\\":
            out.append("\\\\")
        elif char in "\n\r\t\f":
            out.append({"\n": "\\n", "\r": "\\r", "\t": "\\t", "\f": "\\f"}[char])
        elif char in "=:#!" or (char == " " and (key or i == 0)):
            out.append("\\" + char)
        elif ord(char) < 0x20:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return "".join(out)


alphabet = st.sampled_from(["  ", *" =:#!\\\t\n\r\fu"]) | st.characters(
    blacklist_categories=("Cs",)
)
"""Any character, the format's special ones often."""
keys = st.lists(alphabet, min_size=1, max_size=8).map("".join)
values = st.lists(alphabet, max_size=20).map("".join)
separators = st.sampled_from(["=", ":", " ", " = ", "\t:  ", "  "])
comments = st.sampled_from(["", "# a comment\n", "! another = comment\n", "\n", "   \n"])


@st.composite
def properties_files(draw: st.DrawFn) -> tuple[str, list[tuple[int, str, str]]]:
    """A file's text and the ``(line, key, value)`` each property must be read as."""
    entries = draw(st.lists(st.tuples(keys, values), max_size=8))
    text, expected, line = "", [], 1
    for key, value in entries:
        comment = draw(comments)
        text += comment
        line += comment.count("\n")
        escaped = _escape(value, key=False)
        cut = draw(st.integers(0, len(escaped)))
        while cut > 0 and escaped[cut - 1] == "\\":  # never split an escape
            cut -= 1
        if escaped[cut : cut + 1] == "u" or (cut and escaped[cut - 1 : cut + 1] == "\\u"):
            cut = 0  # nor inside \uXXXX
        continued = draw(st.booleans()) and cut > 0
        rest = escaped[cut:]
        if rest.startswith(" "):  # a continuation line's leading white space is dropped
            rest = "\\" + rest
        body = escaped[:cut] + "\\\n   " + rest if continued else escaped
        text += f"{_escape(key, key=True)}{draw(separators)}{body}\n"
        expected.append((line, key, value))
        line += 2 if continued else 1
    return text, expected


@settings(max_examples=500)
@given(properties_files())
def test_every_property_comes_back_with_its_line(
    case: tuple[str, list[tuple[int, str, str]]],
) -> None:
    text, expected = case
    assert list(read_entries(text)) == expected, text


def test_the_forms_java_reads() -> None:
    text = (
        "# comment\n"
        "! also a comment\n"
        "  indented.key   =  spaced value  \n"
        "colon:value\n"
        "space value with spaces\n"
        "equals\\=in\\:key=1\n"
        "unicode=caf\\u00e9\n"
        "continued=one \\\n"
        "           two \\\n"
        "\t three\n"
        "empty=\n"
        "last=crlf\r\n"
    )
    assert list(read_entries(text)) == [
        (3, "indented.key", "spaced value  "),
        (4, "colon", "value"),
        (5, "space", "value with spaces"),
        (6, "equals=in:key", "1"),
        (7, "unicode", "café"),
        (8, "continued", "one two three"),
        (11, "empty", ""),
        (12, "last", "crlf"),
    ]


# ---- translation ------------------------------------------------------------------------------


def _load(tmp_path: Path, text: str) -> dict[str, str]:
    path = tmp_path / "client.properties"
    path.write_text(text)
    return load_client_properties(path).config


def _error(tmp_path: Path, text: str) -> str:
    path = tmp_path / "client.properties"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_client_properties(path)
    return str(caught.value).replace(str(path), "FILE")


def test_scram_over_tls_as_kafka_documents_it(tmp_path: Path) -> None:
    ca = tmp_path / "ca.pem"
    trustme.CA().cert_pem.write_to_path(ca)
    config = _load(
        tmp_path,
        "security.protocol=SASL_SSL\n"
        "sasl.mechanism=SCRAM-SHA-512\n"
        f"sasl.jaas.config={SCRAM} required \\\n"
        '    username="alice" \\\n'
        '    password="p=ss;w\\\\"ord";\n'
        f"ssl.truststore.location={ca}\n"
        "ssl.truststore.type=PEM\n"
        "ssl.endpoint.identification.algorithm=\n"
        "client.id=ops\n",
    )
    assert config == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "alice",
        "sasl.password": 'p=ss;w"ord',
        "ssl.ca.location": str(ca),
        "ssl.endpoint.identification.algorithm": "none",
        "client.id": "ops",
    }


def test_a_pem_keystore_is_the_certificate_and_the_key(tmp_path: Path) -> None:
    pem = tmp_path / "client.pem"
    trustme.CA().issue_cert("client").private_key_and_cert_chain_pem.write_to_path(pem)
    config = _load(
        tmp_path,
        f"security.protocol=SSL\nssl.keystore.location={pem}\nssl.key.password=kp\n"
        "ssl.keystore.key=KEY\nssl.keystore.certificate.chain=CHAIN\n"
        "ssl.truststore.certificates=CAS\n",
    )
    assert config == {
        "security.protocol": "SSL",
        "ssl.certificate.location": str(pem),
        "ssl.key.location": str(pem),
        "ssl.key.password": "kp",
        "ssl.key.pem": "KEY",
        "ssl.certificate.pem": "CHAIN",
        "ssl.ca.pem": "CAS",
    }


def test_plain_and_oauthbearer_login_modules(tmp_path: Path) -> None:
    assert _load(tmp_path, f"sasl.jaas.config={PLAIN} required username=bob password=b0b;") == {
        "sasl.username": "bob",
        "sasl.password": "b0b",
    }
    unsecured = (
        f'sasl.jaas.config={OAUTH} required unsecuredLoginStringClaim_sub="svc" '
        'unsecuredLoginListClaim_scope=",read,write";'
    )
    assert _load(tmp_path, unsecured) == {
        "enable.sasl.oauthbearer.unsecure.jwt": "true",
        "sasl.oauthbearer.config": "principal=svc scope=read,write",
    }
    oidc = f'sasl.jaas.config={OAUTH} required clientId="id" clientSecret="s" scope="api";'
    assert _load(tmp_path, oidc) == {
        "sasl.oauthbearer.method": "oidc",
        "sasl.oauthbearer.client.id": "id",
        "sasl.oauthbearer.client.secret": "s",
        "sasl.oauthbearer.scope": "api",
    }


def test_librdkafka_keys_pass_through_and_the_last_duplicate_wins() -> None:
    entries = [
        (1, "sasl.mechanisms", "PLAIN"),
        (2, "ssl.ca.location", "a"),
        (3, "ssl.ca.location", "b"),
    ]
    assert translate(entries, "f").config == {"sasl.mechanisms": "PLAIN", "ssl.ca.location": "b"}


def test_cipher_suites_by_standard_name_become_openssls_names() -> None:
    java = "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"
    assert translate([(1, "ssl.cipher.suites", java)], "f").config == {
        "ssl.cipher.suites": "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES256-GCM-SHA384"
    }
    librdkafka = "ECDHE-ECDSA-AES128-GCM-SHA256:!aNULL"  # an OpenSSL cipher string: kept
    assert translate([(1, "ssl.cipher.suites", librdkafka)], "f").config == {
        "ssl.cipher.suites": librdkafka
    }


def test_jaas_parsing() -> None:
    module = parse_jaas(f'  {SCRAM}   Required\n username = "a b"  password=x  ;  ')
    assert (module.login_module, module.flag, module.options) == (
        SCRAM,
        "required",
        {"username": "a b", "password": "x"},
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "security.protocol=SSL\nssl.truststore.location={store}\n",
            "FILE:2: ssl.truststore.location: {store} is not PEM (a JKS or PKCS12 store?)",
        ),
        (
            "ssl.keystore.type=JKS\nssl.keystore.location={store}\n",
            "FILE:1: ssl.keystore.type: JKS: only PEM files are supported",
        ),
        (
            "\n\nssl.truststore.type=PKCS12\n",
            "FILE:3: ssl.truststore.type: PKCS12: only PEM files are supported",
        ),
        (
            "ssl.truststore.location={missing}\n",
            "FILE:1: ssl.truststore.location: cannot read {missing}: No such file or directory",
        ),
        (
            "ssl.truststore.password=changeit\n",
            "FILE:1: ssl.truststore.password: PEM files take no store password",
        ),
        (
            "# header\nsasl.jaas.config=com.sun.security.auth.module.Krb5LoginModule required;\n",
            "FILE:2: sasl.jaas.config: com.sun.security.auth.module.Krb5LoginModule is not "
            "supported",
        ),
        (
            f"sasl.jaas.config={SCRAM} required username=alice;\n",
            "FILE:1: sasl.jaas.config: ScramLoginModule needs password",
        ),
        (
            f'sasl.jaas.config={SCRAM} required username="alice" password="x"\n',
            "FILE:1: sasl.jaas.config: expected `LoginModule required",
        ),
        (
            f"sasl.jaas.config={SCRAM} required username=a password=b; {PLAIN} required;\n",
            "FILE:1: sasl.jaas.config: a client takes exactly one login module",
        ),
        (
            "ssl.cipher.suites=TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_AES_256_GCM_SHA384\n",
            "FILE:1: ssl.cipher.suites: TLS_AES_256_GCM_SHA384: TLS 1.3 suites, not in OpenSSL's "
            "cipher list (librdkafka limits the TLS 1.2 suites only",
        ),
        (
            "ssl.cipher.suites=TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_MADE_UP\n",
            "FILE:1: ssl.cipher.suites: unknown cipher suite TLS_MADE_UP",
        ),
        (
            "ssl.enabled.protocols=TLSv1.3\n",
            "FILE:1: ssl.enabled.protocols: a Java client setting librdkafka has no equivalent",
        ),
    ],
    ids=lambda value: value.split(":")[1][:40] if value.startswith("FILE") else None,
)
def test_errors_name_the_file_the_line_and_the_key(
    tmp_path: Path, text: str, expected: str
) -> None:
    store = tmp_path / "client.jks"
    store.write_bytes(b"\xfe\xed\xfe\xed\x00\x00\x00\x02" + bytes(range(256)))
    paths = {"store": str(store), "missing": str(tmp_path / "missing.pem")}
    message = _error(tmp_path, text.format(**paths))
    assert message.startswith(expected.format(**paths)), message


def test_an_unreadable_file_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "nope.properties"
    with pytest.raises(ConfigError, match=f"^{missing}: cannot read: No such file"):
        load_client_properties(missing)
