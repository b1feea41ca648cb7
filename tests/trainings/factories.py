from datetime import timedelta

import factory

from tests.conftest import CURRENT_TIME
from trainings.models import Player, Team, Training


class TeamFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Team

    name = factory.Sequence(lambda n: f"team-{n}")
    # Off unless a test asks: the ladder's tests count rungs in UTC evenings, and the delivery
    # tests run on the real clock, at any hour. tests/trainings/test_training_quiet_hours.py turns it on.
    quiet_hours = False


class PlayerFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Player

    team = factory.SubFactory(TeamFactory)
    name = factory.Sequence(lambda n: f"player-{n}")
    push_token = factory.Sequence(lambda n: f"token-{n}")


class TrainingFactory(factory.django.DjangoModelFactory):
    """A bare training row, without reminders; use services.training_create for those."""

    class Meta:
        model = Training

    team = factory.SubFactory(TeamFactory)
    start_at = CURRENT_TIME + timedelta(days=7)
    end_at = factory.LazyAttribute(lambda training: training.start_at + timedelta(hours=2))
