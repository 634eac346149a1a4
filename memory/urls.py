from __future__ import annotations

from django.urls import path

from .views import account, jobs, notes, sessions

urlpatterns = [
    path("", sessions.home, name="home"),
    path("import/", sessions.import_view, name="session-import"),
    path("sessions/<str:sid>/", sessions.session_page, name="session"),
    path("sessions/<str:sid>/bullets/<int:bullet_id>/", sessions.bullet_turns, name="bullet-turns"),
    path("sessions/<str:sid>/turns/<int:position>/pin/", sessions.pin_turn, name="turn-pin"),
    path("sessions/<str:sid>/compact/", sessions.compact, name="session-compact"),
    path("sessions/<str:sid>/reset/", sessions.reset, name="session-reset"),
    path("sessions/<str:sid>/export/", sessions.export, name="session-export"),
    path("sessions/<str:sid>/reembed/", sessions.reembed, name="session-reembed"),
    path("sessions/<str:sid>/delete/", sessions.delete, name="session-delete"),
    path("jobs/<str:job_id>/", jobs.job, name="job"),
    path("account/", account.tokens, name="tokens"),
    path("notes/", notes.notes, name="notes"),
    path("notes/scope/delete/", notes.delete_scope, name="notes-scope-delete"),
    path("notes/<int:note_id>/delete/", notes.delete_note, name="note-delete"),
    path("account/learned/<int:learned_id>/clear/", account.clear_learned, name="learned-clear"),
    path("account/password/", account.password, name="password"),
]
