"""Saved views and the time-zone page, included into ``batchboard.urls``."""

from __future__ import annotations

from django.urls import path

from batchboard.personal import views

urlpatterns = [
    path("views/", views.saved_views, name="saved_views"),
    path("views/menu/", views.saved_views_menu, name="saved_views_menu"),
    path("views/save/", views.save_view, name="save_view"),
    path("views/default/", views.default_view, name="default_view"),
    # A view's id never changes: links to it survive a rename.
    path("views/<int:view_id>/", views.open_view, name="saved_view"),
    path("views/<int:view_id>/edit/", views.edit_view, name="edit_view"),
    path("settings/time-zone/", views.time_zone, name="time_zone"),
]
