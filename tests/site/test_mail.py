"""The standalone site's outgoing mail and alert links, read from the environment."""

from __future__ import annotations

import django
import pytest

from batchboard.site.database import SiteConfigurationError
from tests.site.production import site_settings

SMTP = "django.core.mail.backends.smtp.EmailBackend"


def test_the_smtp_server_comes_from_the_environment_whichever_django() -> None:
    site = site_settings(
        EMAIL_HOST="smtp.example.org",
        EMAIL_PORT="587",
        EMAIL_HOST_USER="batchboard",
        EMAIL_HOST_PASSWORD="mail-secret",
        EMAIL_USE_TLS="1",
        DEFAULT_FROM_EMAIL="batchboard@example.org",
    )
    server = {
        "host": "smtp.example.org",
        "port": 587,
        "username": "batchboard",
        "password": "mail-secret",
        "use_tls": True,
        "use_ssl": False,
    }
    assert site["DEFAULT_FROM_EMAIL"] == "batchboard@example.org"
    if django.VERSION >= (6, 1):
        # Django 6.1 refuses the EMAIL_* settings beside MAILERS.
        assert site["MAILERS"] == {"default": {"BACKEND": SMTP, "OPTIONS": server}}
        assert not any(name.startswith("EMAIL_") for name in site)
    else:
        assert "MAILERS" not in site
        assert site["EMAIL_BACKEND"] == SMTP
        assert {
            key: site[f"EMAIL_{name}"]
            for key, name in [
                ("host", "HOST"),
                ("port", "PORT"),
                ("username", "HOST_USER"),
                ("password", "HOST_PASSWORD"),
                ("use_tls", "USE_TLS"),
                ("use_ssl", "USE_SSL"),
            ]
        } == server


def test_without_variables_mail_goes_to_the_local_server() -> None:
    site = site_settings()
    if django.VERSION >= (6, 1):
        options = site["MAILERS"]["default"]["OPTIONS"]
        assert (options["host"], options["port"]) == ("localhost", 25)
    else:
        assert (site["EMAIL_HOST"], site["EMAIL_PORT"]) == ("localhost", 25)
    # Django's own default sender stands.
    assert "DEFAULT_FROM_EMAIL" not in site


@pytest.mark.parametrize("port", ["smtp", "0", "70000", "-25"])
def test_a_port_that_is_not_one_stops_the_site(port: str) -> None:
    with pytest.raises(SiteConfigurationError, match="^EMAIL_PORT must be a port"):
        site_settings(EMAIL_PORT=port)


def test_starttls_and_tls_from_the_start_exclude_each_other() -> None:
    with pytest.raises(SiteConfigurationError, match="exclude each other"):
        site_settings(EMAIL_USE_TLS="1", EMAIL_USE_SSL="1")


def test_alert_links_take_the_sites_address() -> None:
    site = site_settings(BATCHBOARD_ALERTS_BASE_URL="https://batch.example.org")
    assert site["BATCHBOARD"]["ALERTS_BASE_URL"] == "https://batch.example.org"
    assert "ALERTS_BASE_URL" not in site_settings()["BATCHBOARD"]
