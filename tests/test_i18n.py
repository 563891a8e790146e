"""
Every user-facing string is translatable, and makemessages runs clean.

Two checks: Django's ``makemessages`` extracts the catalogue of a copy of
the package without a warning, and no template of the package shows text
outside ``{% translate %}`` or ``{% blocktranslate %}``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import batchboard

PACKAGE = Path(batchboard.__file__).resolve().parent
ROOT = PACKAGE.parent

# Markup, comments, variables and tags go first; then what is left of a
# template is the text a reader sees. Translated blocks go with their tags.
_BLOCKTRANSLATE = re.compile(
    r"{%\s*blocktranslate\b.*?%}.*?{%\s*endblocktranslate\s*%}", re.S
)
_COMMENT_BLOCK = re.compile(r"{%\s*comment\s*%}.*?{%\s*endcomment\s*%}", re.S)
_TEMPLATE_SYNTAX = re.compile(r"{#.*?#}|{%.*?%}|{{.*?}}", re.S)
_ELEMENTS = re.compile(r"<(script|style)\b.*?</\1>|<!--.*?-->|<[^>]*>", re.S)
_ENTITY = re.compile(r"&[#a-zA-Z0-9]+;")
# Words of two letters or more: symbols, digits and punctuation (·, —, #,
# %, →) carry no language. The product's name is the same in every language.
_WORD = re.compile(r"[^\W\d_]{2,}")
_NAME = re.compile(r"\bbatchboard\b")


def _visible_text(source: str) -> list[str]:
    text = _BLOCKTRANSLATE.sub(" ", source)
    text = _COMMENT_BLOCK.sub(" ", text)
    text = _TEMPLATE_SYNTAX.sub(" ", text)
    text = _ELEMENTS.sub(" ", text)
    text = _ENTITY.sub(" ", text)
    text = _NAME.sub(" ", text)
    return [line.strip() for line in text.splitlines() if _WORD.search(line)]


def test_templates_show_no_untranslated_text() -> None:
    """Text in the package's templates is inside a translation tag."""
    untranslated = {
        str(path.relative_to(PACKAGE)): lines
        for path in sorted((PACKAGE / "templates").rglob("*.html"))
        if (lines := _visible_text(path.read_text(encoding="utf-8")))
    }
    assert untranslated == {}


def test_visible_text_finds_plain_words_only() -> None:
    """The scan ignores tags, variables, comments and translated text."""
    source = (
        "{% load i18n %}{# a note #}<p title='x'>{{ value }}</p>"
        "{% translate 'Shown' %}{% blocktranslate %}Also {{ n }}"
        "{% endblocktranslate %} · #{{ id }} &mdash;\n<span>Plain words</span>"
    )
    assert _visible_text(source) == ["Plain words"]


@pytest.mark.skipif(shutil.which("xgettext") is None, reason="gettext is not installed")
def test_makemessages_runs_clean(tmp_path: Path) -> None:
    """makemessages extracts the catalogue without a warning or an error."""
    copy = tmp_path / "batchboard"
    shutil.copytree(
        PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
    )
    (copy / "locale").mkdir(exist_ok=True)
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "PYTHONPATH": str(ROOT),
    }
    result = subprocess.run(
        [sys.executable, "-m", "django", "makemessages", "--locale", "de"],
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    catalogue = (copy / "locale" / "de" / "LC_MESSAGES" / "django.po").read_text(
        encoding="utf-8"
    )
    # One string from each part: the explorer, the console and the admin.
    for msgid in ("Not found", "Not allowed", "Next page"):
        assert f'msgid "{msgid}"' in catalogue, msgid
