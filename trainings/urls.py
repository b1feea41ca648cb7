from scheduling.api import DigitIdRouter
from trainings.api import views

app_name = "trainings"

router = DigitIdRouter()
router.register("teams", views.TeamViewSet)
router.register("players", views.PlayerViewSet)
router.register("trainings", views.TrainingViewSet)
router.register("invitations", views.InvitationViewSet)
router.register("scheduled-training-notifications", views.ScheduledTrainingNotificationViewSet)

urlpatterns = router.urls
