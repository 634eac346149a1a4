from __future__ import annotations

from django.urls import path

from . import views

urlpatterns = [
    path("", views.lesson_list, name="lessons"),
    path("<int:record_id>/", views.lesson_row, name="lesson"),
    path("<int:record_id>/edit/", views.lesson_edit, name="lesson-edit"),
    path("<int:record_id>/delete/", views.lesson_delete, name="lesson-delete"),
]
