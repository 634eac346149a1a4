from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.urls import path

from . import views

urlpatterns = [
    path("login/", views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("login/link/<str:uidb64>/<str:token>/", views.login_link, name="login-link"),
    path("account/tokens/<int:token_id>/revoke/", views.revoke_token, name="token-revoke"),
    path("audit/", views.audit, name="audit"),
]
