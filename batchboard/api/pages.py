"""
The API-token page: a signed-in user creates, lists and revokes their own tokens.

The secret is shown once, on the page answering the creation, and never
again (only its hash is kept). The page needs no batchboard permission: a
token can never do more than its owner may, so anyone signed in may hold
one.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext_lazy as _
from django.views.decorators.cache import cache_control
from django.views.decorators.http import require_http_methods, require_POST

from batchboard.api import tokens
from batchboard.vocabulary import parse_whole_number


class TokenForm(forms.Form):
    name = forms.CharField(label=_("Name"), max_length=64)
    classes = tokens.classes_field()
    days = tokens.days_field()


@cache_control(private=True, no_store=True)
@login_required
@require_http_methods(["GET", "POST"])
def token_list(request: HttpRequest) -> HttpResponse:
    """List the user's tokens; a valid POST creates one and shows its secret once."""
    secret = None
    form = TokenForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        _token, secret = tokens.create_token(
            request.user,
            form.cleaned_data["name"],
            form.cleaned_data["classes"],
            form.cleaned_data["days"],
        )
        form = TokenForm()
    context: dict[str, Any] = {
        "form": form,
        "secret": secret,
        "tokens": tokens.ApiToken.objects.filter(user_id=request.user.pk or 0).order_by(
            "-id"
        ),
    }
    response = render(request, "batchboard/tokens.html", context)
    response["Cache-Control"] = "private, no-store"
    return response


@cache_control(private=True, no_store=True)
@login_required
@require_POST
def token_revoke(request: HttpRequest) -> HttpResponse:
    """Revoke one of the user's own tokens (``token``: its id), then list them."""
    ident = parse_whole_number(str(request.POST.get("token", "")))
    if ident is not None:
        token = tokens.ApiToken.objects.filter(
            pk=ident, user_id=request.user.pk or 0
        ).first()
        if token is not None:
            tokens.revoke(token)
    return redirect("batchboard:api_tokens")
