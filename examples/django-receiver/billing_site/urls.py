from django.urls import path

from webhooks import views

urlpatterns = [
    path("healthz", views.healthz),
    path("webhooks/<str:source>/<str:account>/", views.receive),
]
