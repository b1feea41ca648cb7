"""What people look at: the admin (admin/), the REST API (api/), the dashboard, metrics and
health views (views.py, health.py), and the form fields they share (forms.py).

The top wing: it may import delivery, rows and time."""
