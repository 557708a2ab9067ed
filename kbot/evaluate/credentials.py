"""Which environment variables hold credentials, and keeping their values out of text.

One definition for the evaluator (what a judge or candidate process may never inherit) and for
everything that prints what a candidate printed (the value of every such variable is masked).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from urllib.parse import parse_qsl, unquote, urlsplit, urlunsplit

# Anything that looks like a credential, and the namespaces of services kbot talks to.
_SECRET_WORDS = re.compile(
    r"TOKEN|KEY|SECRET|PASS|CREDENTIAL|CREDS|AUTH|COOKIE|SESSION|PRIVATE|BEARER"
    # PWD and PAT as words of a name (DB_PWD, GH_PAT), not the shell's PWD or PATH
    r"|_PWD(?:_|$)|(?:^|_)PAT(?:_|$)",
    re.I,
)
_SECRET_PREFIXES = (
    "GITHUB_",
    "GH_",
    "OPENAI_",
    "ANTHROPIC_",
    "AWS_",
    "AZURE_",
    "GOOGLE_",
    "GCP_",
    "HF_",
    "HUGGING",
    "ACTIONS_",
    "RUNNER_",
    "SSH_",
    "NPM_",
    "PYPI_",
    "TWINE_",
    "KBOT_LLM_",
    "KBOT_PUBLISH_",
)
# A user's own credentials under other names: `KBOT_SECRET_ENV=DEPLOY_VALUE,OTHER`.
EXTRA_NAMES_VARIABLE = "KBOT_SECRET_ENV"
MASK = "***"


def _extra_names(environ: Mapping[str, str]) -> set[str]:
    return {n.strip() for n in environ.get(EXTRA_NAMES_VARIABLE, "").split(",") if n.strip()}


def is_secret_name(name: str, environ: Mapping[str, str] | None = None) -> bool:
    extra = _extra_names(os.environ if environ is None else environ)
    return (
        name in extra
        or bool(_SECRET_WORDS.search(name))
        or name.upper().startswith(_SECRET_PREFIXES)
    )


def scrub_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """A copy of `environ` without credentials or the variables of services kbot uses."""
    return {n: v for n, v in environ.items() if not is_secret_name(n, environ)}


def secret_values(environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The values of the credential variables set here (at least 4 characters long)."""
    environ = os.environ if environ is None else environ
    return tuple(
        v for n, v in environ.items() if is_secret_name(n, environ) and v and len(v.strip()) >= 4
    )


def held_credentials(environ: Mapping[str, str] | None = None) -> list[str]:
    """The names of the credential variables set (non-empty) in `environ`."""
    environ = os.environ if environ is None else environ
    return sorted(n for n, v in environ.items() if v and is_secret_name(n, environ))


def mask(text: str, values: Iterable[str]) -> str:
    """`text` with every value in `values` replaced by ***, longest first; a value read with
    surrounding whitespace (a key file's newline) is matched without it too."""
    forms = {form for v in values if v for form in (v, v.strip()) if len(form) >= 4}
    for value in sorted(forms, key=len, reverse=True):
        text = text.replace(value, MASK)
    return text


# What tokens look like when a value is pasted where a variable's NAME belongs.
_TOKEN_PREFIXES = ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "sk-", "hf_")
_URL_USERINFO = re.compile(r"^(?P<scheme>[A-Za-z][\w+.-]*://)(?P<userinfo>[^/?#@]*)@")


def looks_like_token(value: str) -> bool:
    """Whether `value` looks like a credential itself: a known token prefix, or a long string
    mixing letters and digits (32+ characters) that no variable name would be."""
    if value.startswith(_TOKEN_PREFIXES):
        return True
    long_mixed = len(value) >= 32 and any(c.isdigit() for c in value)
    return long_mixed and any(c.islower() for c in value) and any(c.isupper() for c in value)


def url_credentials(url: str | None) -> tuple[str, ...]:
    """The user and password in `url`'s userinfo (`https://user:token@host`), and its query
    values (`?api-key=...`): the parts of a URL that may be credentials."""
    if not url:
        return ()
    parts = urlsplit(url)
    found = [unquote(v) for v in (parts.username, parts.password) if v]
    found += [value for _, value in parse_qsl(parts.query) if value]
    return tuple(found)


def strip_userinfo(url: str) -> str:
    """`url` without `user:password@`; other text (a path, an scp-like `git@host:o/r`) as is."""
    return _URL_USERINFO.sub(r"\g<scheme>", url)


def public_url(url: str | None) -> str | None:
    """`url` as it may be shown or stored: userinfo and every query value replaced by ***."""
    if not url:
        return url
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{MASK}@{netloc.rsplit('@', 1)[1]}"
    query = "&".join(f"{name}={MASK}" for name, _ in parse_qsl(parts.query, keep_blank_values=True))
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
