"""The dashboard's security headers and the settings for running behind a TLS proxy."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.live import ROOT

POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)


def test_every_page_carries_the_content_security_policy(client, alice):
    client.force_login(alice)

    pages = [client.get(url) for url in ("/", "/lessons/", "/account/", "/api/v1/docs")]
    anonymous = client.__class__().get("/login/")

    assert [(p.status_code, p["Content-Security-Policy"]) for p in [*pages, anonymous]] == [(200, POLICY)] * 5


def settings_under(**env: str) -> dict:
    script = (
        "import json; from django.conf import settings as s; print(json.dumps([s.SESSION_COOKIE_SECURE, "
        "s.CSRF_COOKIE_SECURE, getattr(s, 'SECURE_PROXY_SSL_HEADER', None), s.CSRF_TRUSTED_ORIGINS, "
        "s.SECURE_HSTS_SECONDS]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {script}"],
        cwd=ROOT,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "ottoweb.settings", **env},
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_behind_a_tls_proxy_cookies_are_secure_and_the_proxy_header_is_believed():
    default = settings_under()
    proxied = settings_under(
        OTTO_SECURE_COOKIES="1",
        OTTO_PROXY_SSL_HEADER="X-Forwarded-Proto",
        OTTO_CSRF_TRUSTED_ORIGINS="https://memory.example.com",
        OTTO_HSTS_SECONDS="31536000",
    )

    assert default == [False, False, None, [], 0]
    assert proxied == [
        True,
        True,
        ["HTTP_X_FORWARDED_PROTO", "https"],
        ["https://memory.example.com"],
        31536000,
    ]
