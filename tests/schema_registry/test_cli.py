"""``sluice schemas`` against a real registry, each command once."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.conftest import run_sluice
from tests.schema_registry.conftest import RegistryProcess

V1 = {"type": "record", "name": "User", "fields": [{"name": "name", "type": "string"}]}
V2 = {
    "type": "record",
    "name": "User",
    "fields": [
        {"name": "name", "type": "string"},
        {"name": "age", "type": "int", "default": 0},
    ],
}
BAD = {
    "type": "record",
    "name": "User",
    "fields": [{"name": "name", "type": "string"}, {"name": "email", "type": "string"}],
}


def test_schemas_commands(registry: RegistryProcess, tmp_path: Path) -> None:
    files = {}
    for name, schema in (("v1", V1), ("v2", V2), ("bad", BAD)):
        files[name] = tmp_path / f"{name}.avsc"
        files[name].write_text(json.dumps(schema))
    url = ("--url", registry.url)

    done = run_sluice("schemas", "register", "users-value", "--schema", str(files["v1"]), *url)
    assert done.code == 0, done
    assert done.out.split("\n")[1].split() == ["users-value", "1", "1"], done

    done = run_sluice("schemas", "compat", "users-value", "--schema", str(files["bad"]), *url)
    assert done.code == 1, done
    assert "READER_FIELD_MISSING_DEFAULT_VALUE" in done.err, done
    done = run_sluice("schemas", "compat", "users-value", "--schema", str(files["v2"]), *url)
    assert (done.code, done.out.strip()) == (0, "compatible with users-value"), done

    done = run_sluice("schemas", "register", "users-value", "-s", str(files["bad"]), *url)
    assert done.code == 1, done
    assert done.err.startswith("error: Schema being registered is incompatible"), done
    assert done.err.rstrip().endswith("(409)"), done

    assert run_sluice("schemas", "register", "users-value", "-s", str(files["v2"]), *url).code == 0
    done = run_sluice("schemas", "list", *url)
    assert done.code == 0, done
    assert done.out.splitlines() == [
        "SUBJECT      LATEST  ID  TYPE",
        "users-value  2       2   AVRO",
    ]

    done = run_sluice("schemas", "versions", "users-value", *url)
    assert done.out.splitlines()[1:] == ["1        1   AVRO", "2        2   AVRO"], done

    done = run_sluice("schemas", "get", "users-value", "--version", "1", *url)
    assert done.code == 0, done
    assert json.loads(done.out) == V1
    assert "users-value version 1, id 1, AVRO" in done.err
    done = run_sluice("schemas", "get", "--id", "2", *url)
    assert json.loads(done.out) == V2, done

    done = run_sluice("schemas", "config", "users-value", "--set", "full", *url)
    assert done.out.splitlines()[1].split() == ["users-value", "FULL"], done
    done = run_sluice("schemas", "config", *url)
    assert done.out.splitlines()[1].split() == ["(global)", "BACKWARD"], done
    done = run_sluice("schemas", "config", "--set", "sideways", *url)
    assert done.code == 1 and "(42203)" in done.err, done

    done = run_sluice("schemas", "mode", "users-value", "--set", "READONLY", *url)
    assert done.out.splitlines()[1].split() == ["users-value", "READONLY"], done
    done = run_sluice("schemas", "delete", "users-value", *url)
    assert done.code == 1 and "read-only mode (42205)" in done.err, done
    done = run_sluice("schemas", "mode", "users-value", "--delete", *url)
    assert done.out.splitlines()[1].split() == ["users-value", "READWRITE"], done

    done = run_sluice("schemas", "delete", "users-value", "--version", "1", *url)
    assert (done.code, done.out.strip()) == (0, "users-value: soft-deleted version 1"), done
    done = run_sluice("schemas", "delete", "users-value", *url)
    assert done.out.strip() == "users-value: soft-deleted version(s) 2", done
    done = run_sluice("schemas", "delete", "users-value", "--permanent", *url)
    assert done.out.strip() == "users-value: permanently deleted version(s) 1, 2", done
    done = run_sluice("schemas", "versions", "users-value", *url)
    assert (done.code, done.err.strip()) == (1, "error: Subject 'users-value' not found. (40401)")


def test_unreachable_registry_is_a_clear_error() -> None:
    done = run_sluice("schemas", "list", "--url", "http://127.0.0.1:9")
    assert done.code == 1
    assert done.err.startswith("error: cannot reach the schema registry at http://127.0.0.1:9")
