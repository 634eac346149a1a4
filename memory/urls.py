from __future__ import annotations

from django.urls import path

from . import views

urlpatterns = [
    path("", views.home, name="home"),
    path("import/", views.import_view, name="session-import"),
    path("sessions/<str:sid>/", views.session_page, name="session"),
    path("sessions/<str:sid>/bullets/<int:bullet_id>/", views.bullet_turns, name="bullet-turns"),
    path("sessions/<str:sid>/compact/", views.compact, name="session-compact"),
    path("sessions/<str:sid>/reset/", views.reset, name="session-reset"),
    path("sessions/<str:sid>/export/", views.export, name="session-export"),
    path("sessions/<str:sid>/reembed/", views.reembed, name="session-reembed"),
    path("sessions/<str:sid>/delete/", views.delete, name="session-delete"),
    path("jobs/<str:job_id>/", views.job, name="job"),
    path("account/", views.tokens, name="tokens"),
    path("audit/", views.audit, name="audit"),
    path("notes/", views.notes, name="notes"),
    path("notes/scope/delete/", views.delete_scope, name="notes-scope-delete"),
    path("notes/<int:note_id>/delete/", views.delete_note, name="note-delete"),
    path("account/tokens/<int:token_id>/revoke/", views.revoke_token, name="token-revoke"),
    path("account/learned/<int:learned_id>/clear/", views.clear_learned, name="learned-clear"),
    path("account/password/", views.password, name="password"),
    path("login/link/<str:uidb64>/<str:token>/", views.login_link, name="login-link"),
]
