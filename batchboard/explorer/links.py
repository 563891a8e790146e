"""
The explorer's links: URL patterns reversed once, and the job-path codec.

A page of rows links to several pages per row; reversing each link cost
more than the query that read the rows. :func:`url_pattern` reverses a
page's name once per URL setup (script prefix, URLconf) around a stand-in
id, and :class:`Links` looks each pattern up once per page. A job's page
holds its name as one path segment: :func:`job_segment` and
:func:`job_name_from_path` are the codec both ways, :func:`job_url` the link.
"""

from __future__ import annotations

import functools
from typing import Final
from urllib.parse import quote, urlencode

from django.conf import settings
from django.urls import get_script_prefix, get_urlconf, reverse
from django.utils.html import escape
from django.utils.safestring import SafeString

# Django's reverse() leaves these characters unquoted in paths.
_PATH_SAFE = "!$&'()*+,;=/~:@"
_PLACEHOLDER = "987654321987"


@functools.lru_cache(maxsize=256)
def _pattern(
    name: str, prefix: str, urlconf: str | None, root: str
) -> tuple[SafeString, SafeString]:
    head, _placeholder, tail = reverse(name, args=[_PLACEHOLDER]).partition(
        _PLACEHOLDER
    )
    return escape(head), escape(tail)


def url_pattern(name: str) -> tuple[SafeString, SafeString]:
    """
    Return the link to page ``name`` around its one id, as escaped (head, tail).

    A page of rows links to several pages per row; reversing each link cost
    more than the query that read the rows, so each name is reversed once
    (per script prefix and URLconf) and the id placed between.
    """
    return _pattern(
        name, get_script_prefix(), get_urlconf(), str(settings.ROOT_URLCONF)
    )


def link(name: str, pk: int | None) -> SafeString | None:
    """Return the link to page ``name`` for the id ``pk`` (none for no id)."""
    if pk is None:
        return None
    head, tail = url_pattern(name)
    return SafeString(f"{head}{int(pk)}{tail}")


def compare_link(left: int, right: int) -> SafeString:
    """Return the link to the comparison of executions ``left`` and ``right``."""
    return SafeString(escape(reverse("batchboard:compare", args=[left, right])))


#: Job names browsers would resolve as a path segment ("." and ".."),
#: and how their segment reads once the server has decoded it.
_DOT_NAMES: Final = {".": "%2E", "..": "%2E%2E"}
_ESCAPED_PREFIX: Final = "%25"


def _escaped_dots(segment: str) -> bool:
    """Return whether a decoded segment is ``%2E``/``%2E%2E`` under ``%25``s."""
    while segment.startswith(_ESCAPED_PREFIX):
        segment = segment[len(_ESCAPED_PREFIX) :]
    return segment in _DOT_NAMES.values()


def job_segment(job_name: str) -> str:
    """
    Return a job name as the job page's path holds it once decoded.

    That is the name itself, except for the two names a browser would
    resolve as a dot segment (``.`` and ``..``), held as ``%2E``/``%2E%2E``;
    a name that itself reads like that gets one more ``%25`` in front, so
    :func:`job_name_from_path` reads every name back exactly.
    """
    if job_name in _DOT_NAMES:
        return _DOT_NAMES[job_name]
    if _escaped_dots(job_name):
        return _ESCAPED_PREFIX + job_name
    return job_name


def job_name_from_path(segment: str) -> str:
    """Return the job name a decoded job page path holds (see job_segment)."""
    if not _escaped_dots(segment):
        return segment
    if segment.startswith(_ESCAPED_PREFIX):
        return segment[len(_ESCAPED_PREFIX) :]
    return {escaped: name for name, escaped in _DOT_NAMES.items()}[segment]


#: Characters a job link leaves unquoted: reverse()'s, but not "/", so a
#: name stays one path segment ("a/b" links as "a%2Fb").
_JOB_SAFE = _PATH_SAFE.replace("/", "")


def job_url(job_name: str, pattern: tuple[str, str] | None = None) -> SafeString:
    """Return the link to a job's page (``/`` in the name as ``%2F``)."""
    head, tail = pattern or url_pattern("batchboard:job")
    segment = escape(quote(job_segment(job_name), safe=_JOB_SAFE))
    return SafeString(f"{head}{segment}{tail}")


@functools.lru_cache(maxsize=64)
def _list(name: str, prefix: str, urlconf: str | None, root: str) -> str:
    return reverse(name)


def list_url(name: str) -> str:
    """Return list page ``name``'s address, reversed once per URL setup."""
    return _list(name, get_script_prefix(), get_urlconf(), str(settings.ROOT_URLCONF))


def job_filter_url(
    name: str, job_name: str, base: str | None = None, status: str = ""
) -> str:
    """
    Return list page ``name`` filtered to one job (``?job=``), and a status.

    The one builder of the executions list's and the audit log's links for
    a job; the list's address (``base``, if known) is reversed once per name.
    ``status`` is a status or a shortcut of ``vocabulary.STATUS_SETS``.
    """
    query = {"job": job_name, **({"status": status} if status else {})}
    return f"{base or list_url(name)}?{urlencode(query)}"


class Links:
    """
    The links one page shows: each pattern looked up once per page, each
    job's link built and escaped once.

    Reading the URL setup (script prefix, URLconf) costs a context-local
    lookup each time; a page asks for the same few patterns hundreds of times.
    """

    def __init__(self) -> None:
        self._jobs: dict[str, SafeString] = {}
        self._patterns: dict[str, tuple[SafeString, SafeString]] = {}
        self._lists: dict[str, str] = {}

    def pattern(self, name: str) -> tuple[SafeString, SafeString]:
        """Return :func:`url_pattern` of ``name``, looked up once per page."""
        found = self._patterns.get(name)
        if found is None:
            found = self._patterns[name] = url_pattern(name)
        return found

    def link(self, name: str, pk: int | None) -> SafeString | None:
        """Return :func:`link` of ``name`` and ``pk``, its pattern looked up once."""
        if pk is None:
            return None
        head, tail = self.pattern(name)
        return SafeString(f"{head}{int(pk)}{tail}")

    def job(self, job_name: str) -> SafeString:
        found = self._jobs.get(job_name)
        if found is None:
            found = self._jobs[job_name] = job_url(
                job_name, self.pattern("batchboard:job")
            )
        return found

    def job_filter(self, name: str, job_name: str, status: str = "") -> str:
        """Return :func:`job_filter_url`, the list's address reversed once per page."""
        base = self._lists.get(name)
        if base is None:
            base = self._lists[name] = list_url(name)
        return job_filter_url(name, job_name, base, status)
