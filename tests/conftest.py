"""Every backend that must work where the tests run: CI installs bubblewrap, and the
kernel there offers Landlock. One that does not work fails its tests with the probe's
reason, rather than skipping them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tether.sandbox.base import Sandbox
from tether.sandbox.choose import backend

BACKENDS = ("bwrap", "landlock")


@pytest.fixture(params=BACKENDS)
def box(request: pytest.FixtureRequest) -> Iterator[Sandbox]:
    sandbox = backend(request.param)
    reason = sandbox.probe()
    if reason is not None:
        pytest.fail(f"the {request.param} sandbox does not work on this machine: {reason}")
    yield sandbox
    sandbox.close()
