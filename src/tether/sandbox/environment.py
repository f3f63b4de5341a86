"""The environment commands get: no credentials, no pagers, no prompts.

A sandbox keeps a command from writing where it should not; it does not keep it from
reading what it is handed. So the keys of the model endpoint and the usual cloud,
package-registry and VCS credentials never reach tool processes. Names the user
lists in `[sandbox] pass_env` are passed through anyway.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

__all__ = ["is_credential", "tool_environment"]

_EXACT = frozenset(
    {
        "TETHER_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY",
        "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
        "AZURE_CLIENT_SECRET", "AZURE_CLIENT_ID", "AZURE_TENANT_ID",
        "GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_API_KEY", "CLOUDSDK_AUTH_ACCESS_TOKEN_FILE",
        "GITHUB_TOKEN", "GH_TOKEN", "GITLAB_TOKEN", "GL_TOKEN", "BITBUCKET_TOKEN",
        "NPM_TOKEN", "NODE_AUTH_TOKEN", "YARN_NPM_AUTH_TOKEN", "TWINE_PASSWORD",
        "TWINE_USERNAME", "PYPI_TOKEN", "UV_PUBLISH_TOKEN", "POETRY_PYPI_TOKEN_PYPI",
        "CARGO_REGISTRY_TOKEN", "GEM_HOST_API_KEY", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN",
        "DOCKER_PASSWORD", "DOCKER_AUTH_CONFIG", "SSH_AUTH_SOCK", "GPG_AGENT_INFO",
        "VAULT_TOKEN", "DIGITALOCEAN_TOKEN", "HEROKU_API_KEY", "SLACK_TOKEN",
        "DATABASE_URL", "PGPASSWORD", "MYSQL_PWD", "KUBECONFIG",
    }
)  # fmt: skip
# Anything that looks like a secret by its name: *_API_KEY, *_TOKEN, *_SECRET, *PASSWORD*...
_PATTERN = re.compile(
    r"(?:^|_)(?:API_?KEY|ACCESS_?KEY|SECRETS?|TOKEN|PASSWORD|PASSWD|PASSPHRASE|CREDENTIALS?"
    r"|PRIVATE_KEY)(?:_|$)|(?:^|_)(?:KEY|PAT)$|^(?:AWS|AZURE|GCP|GOOGLE_CLOUD|OCI|ALIBABA)_",
)
_FIXED = {"PAGER": "cat", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0", "TETHER": "1"}


def is_credential(name: str) -> bool:
    return name in _EXACT or _PATTERN.search(name.upper()) is not None


def tool_environment(
    environ: Mapping[str, str], *, secrets: Iterable[str] = (), pass_env: Iterable[str] = ()
) -> dict[str, str]:
    """`environ` without credentials (by name, or by value equal to a known secret)."""
    keep = frozenset(pass_env)
    values = frozenset(s for s in secrets if s)
    env = {
        k: v for k, v in environ.items() if k in keep or (not is_credential(k) and v not in values)
    }
    env.update(_FIXED)
    return env
