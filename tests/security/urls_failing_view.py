"""A test-only URLconf: one token-authenticated API view that fails with a server error."""

from django.urls import path
from rest_framework.authentication import TokenAuthentication
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView


class FailingView(APIView):
    authentication_classes = [TokenAuthentication]
    permission_classes = [IsAuthenticated]

    def post(self, request: Request) -> Response:
        raise RuntimeError("the view failed")


urlpatterns = [path("failing/", FailingView.as_view())]
