"""The demo site's API front door: the index of every resource, the token endpoint, and the
docs pages, which tell a visitor who is not signed in how to sign in instead of a bare 403."""

from __future__ import annotations

from typing import Any

from axes.helpers import get_lockout_message
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import NoReverseMatch, reverse
from drf_spectacular.utils import OpenApiExample, extend_schema, inline_serializer
from drf_spectacular.views import SpectacularRedocView, SpectacularSwaggerView
from rest_framework import exceptions, serializers, status
from rest_framework.authtoken.serializers import AuthTokenSerializer
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse as api_reverse
from rest_framework.routers import SimpleRouter
from rest_framework.throttling import AnonRateThrottle
from rest_framework.views import APIView

from purchases.urls import router as purchases_router
from scheduling.api.urls import router as scheduling_router
from trainings.urls import router as trainings_router

# (URL namespace, router): every router mounted under /api/.
ROUTERS: list[tuple[str, SimpleRouter]] = [
    ("", scheduling_router),
    ("purchases", purchases_router),
    ("trainings", trainings_router),
]
GUIDES = {"auth/token": "api-token", "schema": "schema", "docs": "api-docs", "redoc": "api-redoc"}


class ApiRootView(APIView):
    """Every resource of the API, by its path under /api/, with the token endpoint and docs."""

    permission_classes = (IsAuthenticated,)

    @extend_schema(exclude=True)
    def get(self, request: Request) -> Response:
        links = {}
        for namespace, router in ROUTERS:
            prefix = f"{namespace}:" if namespace else ""
            for route, _viewset, basename in router.registry:
                links[route] = api_reverse(f"{prefix}{basename}-list", request=request)
        for route, name in GUIDES.items():
            try:
                links[route] = api_reverse(name, request=request)
            except NoReverseMatch:
                continue
        return Response(dict(sorted(links.items())))


class TokenThrottle(AnonRateThrottle):
    """Password guesses per client address (project.client_ip's rule: NUM_PROXIES)."""

    scope = "token"
    rate = "20/min"


class TokenRequestSerializer(AuthTokenSerializer):
    # No username is longer than auth's User.username (150); django-axes records each failed
    # one in a column of 255 characters, so a longer one is a 400 here, not a database error.
    username = serializers.CharField(label="Username", write_only=True, max_length=150)


class SignInLocked(exceptions.APIException):
    """django-axes locked this client out: AXES_FAILURE_LIMIT failed sign-ins in a row."""

    status_code = status.HTTP_429_TOO_MANY_REQUESTS
    default_code = "locked_out"


@extend_schema(
    tags=["auth"],
    summary="Get your API token",
    description="Send your username and password; send the token back on every request as "
    "`Authorization: Token <token>`. The same user always gets the same token. Too many "
    "requests, or too many failed sign-ins from one address (then a correct password too, "
    "until the lockout ends or an administrator lifts it): 429.",
    auth=[],
    request=TokenRequestSerializer,
    responses={
        200: inline_serializer("TokenResponse", {"token": serializers.CharField()}),
        400: inline_serializer(
            "TokenError",
            {"non_field_errors": serializers.ListField(child=serializers.CharField())},
        ),
        429: inline_serializer("TokenRefused", {"detail": serializers.CharField()}),
    },
    examples=[
        OpenApiExample(
            "Sign in", value={"username": "admin", "password": "admin"}, request_only=True
        )
    ],
)
class TokenView(ObtainAuthToken):
    """DRF's obtain_auth_token, documented and throttled. Its serializer authenticates with
    the request, so django-axes counts each failure and refuses a locked-out client."""

    authentication_classes = ()  # a password is the credential; no session, so no CSRF step
    throttle_classes = (TokenThrottle,)
    serializer_class = TokenRequestSerializer

    def post(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        try:
            return super().post(request, *args, **kwargs)
        except exceptions.ValidationError:
            # axes marks the request it was handed (this DRF one, which its middleware never
            # sees) when this failure locked the client out or found it locked out already.
            if getattr(request, "axes_locked_out", False):
                raise SignInLocked(get_lockout_message()) from None
            raise


class SignInFirst(APIView):
    """For the docs views: a visitor who is not signed in gets a page saying how to."""

    def handle_exception(self, exc: Exception) -> Any:
        if isinstance(exc, exceptions.NotAuthenticated | exceptions.AuthenticationFailed):
            return sign_in_page(self.request._request)
        return super().handle_exception(exc)


class DocsView(SignInFirst, SpectacularSwaggerView):
    pass


class RedocView(SignInFirst, SpectacularRedocView):
    template_name = "api/redoc.html"  # drf-spectacular's, without its web fonts


def sign_in_page(request: HttpRequest) -> HttpResponse:
    """401 (the docs need a signed-in user), with the two ways to become one."""
    try:
        login = reverse("admin:login")
    except NoReverseMatch:
        login = ""
    context = {
        "login_url": f"{login}?next={request.path}" if login else "",
        "token_url": request.build_absolute_uri(reverse("api-token")),
        "api_url": request.build_absolute_uri(reverse("api-root")),
    }
    response = render(request, "api/sign_in.html", context, status=401)
    response["WWW-Authenticate"] = 'Token realm="api"'
    return response
