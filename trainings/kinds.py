from django.db import models


class NotificationKind(models.TextChoices):
    PRE_QUESTIONNAIRE = "pre_questionnaire", "Pre-training questionnaire"
    POST_QUESTIONNAIRE = "post_questionnaire", "Post-training questionnaire"
    INVITATION = "invitation", "Invitation"


class Phase(models.TextChoices):
    PRE = "pre", "Before the training"
    POST = "post", "After the training"


class InvitationStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    ACCEPTED = "accepted", "Accepted"
    DENIED = "denied", "Denied"


# The questionnaire phase each questionnaire reminder asks about.
PHASE_OF_KIND = {
    NotificationKind.PRE_QUESTIONNAIRE: Phase.PRE,
    NotificationKind.POST_QUESTIONNAIRE: Phase.POST,
}
