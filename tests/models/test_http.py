"""Lazy httpx: what loads and what does not, and how clients are configured.

Import effects are process-wide, so each check runs in a fresh interpreter.
"""

from __future__ import annotations

import json
import ssl
import subprocess
import sys
from pathlib import Path

import pytest

from tether.models.http import is_loopback, make_client


def fresh(code: str) -> dict[str, object]:
    """Run `code` in a new interpreter; it must print one JSON object."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    result: dict[str, object] = json.loads(out.stdout)
    return result


def test_import_httpx_skips_the_cli_and_its_dependencies() -> None:
    got = fresh(
        "import json, sys\n"
        "from tether.models.http import import_httpx\n"
        "httpx = import_httpx()\n"
        "ok = httpx.Client is not None and httpx.URL('http://h/v1').path == '/v1'\n"
        "try:\n    httpx.main()\nexcept RuntimeError as e:\n    stub = 'not loaded' in str(e)\n"
        "print(json.dumps({'ok': ok, 'stub': stub,"
        " 'rich': 'rich' in sys.modules, 'click': 'click' in sys.modules}))"
    )
    assert got == {"ok": True, "stub": True, "rich": False, "click": False}


def test_import_httpx_leaves_an_already_imported_httpx_alone() -> None:
    got = fresh(
        "import json, sys, httpx\n"
        "before = sys.modules.get('httpx._main')\n"
        "from tether.models.http import import_httpx\n"
        "print(json.dumps({'same': import_httpx() is httpx"
        " and sys.modules.get('httpx._main') is before}))"
    )
    assert got == {"same": True}


FAKE_TRIO = "class Lock:\n    pass\n"


def test_make_client_defers_trio_until_something_uses_it(tmp_path: Path) -> None:
    # A stand-in trio package on the path plays "trio is installed" (a third-party
    # module, not our code): httpcore must load without it, and get it on first use.
    (tmp_path / "trio").mkdir()
    (tmp_path / "trio/__init__.py").write_text(FAKE_TRIO)
    got = fresh(
        "import json, sys\n"
        f"sys.path.insert(0, {str(tmp_path)!r})\n"
        "from tether.models.http import make_client\n"
        "make_client('http://127.0.0.1:9/v1', timeout_s=1).close()\n"
        "before = 'trio' in sys.modules\n"
        "import httpcore._synchronization as s\n"
        "lock = s.trio.Lock()\n"
        "print(json.dumps({'before': before, 'after': 'trio' in sys.modules,"
        " 'lock': type(lock).__module__.startswith('trio')}))"
    )
    assert got == {"before": False, "after": True, "lock": True}


def test_plain_http_client_loads_no_ca_bundle_and_uses_our_timeouts() -> None:
    client = make_client("http://127.0.0.1:8000/v1", timeout_s=42.0, headers={"X-A": "1"})
    with client:
        timeout = client.timeout
        assert (timeout.connect, timeout.read, timeout.write) == (10.0, 42.0, 30.0)
        assert client.headers["x-a"] == "1"
        assert client.follow_redirects is False
        assert client.trust_env is False  # loopback: no proxy in between
        context = _ssl_context(client)
        if context is not None:
            assert context.verify_mode == ssl.CERT_NONE
            assert context.cert_store_stats()["x509_ca"] == 0


def test_https_client_verifies_certificates() -> None:
    with make_client("https://api.example.com/v1", timeout_s=5) as client:
        assert client.trust_env is True
        context = _ssl_context(client)
        if context is not None:
            assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname


def _ssl_context(client: object) -> ssl.SSLContext | None:
    """The transport's SSL context where this httpx version keeps it (private API)."""
    pool = getattr(getattr(client, "_transport", None), "_pool", None)
    context = getattr(pool, "_ssl_context", None)
    return context if isinstance(context, ssl.SSLContext) else None


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://127.0.0.1:8000/v1", True),
        ("http://127.1.2.3/v1", True),
        ("http://localhost:11434/v1", True),
        ("http://[::1]:8080/v1", True),
        ("https://openrouter.ai/api/v1", False),
        ("http://10.0.0.5:8000/v1", False),
    ],
)
def test_is_loopback(url: str, expected: bool) -> None:
    assert is_loopback(url) is expected
