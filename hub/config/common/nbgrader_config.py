"""nbgrader's settings for every server on the course's JupyterHub (students', instructors', the formgrader's):
the machine's exchange, the course, and enrolment read from the hub's groups (nbgrader-<course> for students,
formgrade-<course> for instructors), so that each user sees the assignments of their own courses only."""

import os

from nbgrader.auth import JupyterHubAuthPlugin

c = get_config()  # noqa: F821 (nbgrader provides it)
c.Exchange.root = os.environ["PPEDU_EXCHANGE"]
c.CourseDirectory.course_id = "ppedu"
c.Authenticator.plugin_class = JupyterHubAuthPlugin
# A submission in the exchange is its student's and the grader's only (nbgrader's own is open to all).
c.ExchangeFactory.submit = "ppedu.grading.submit.PrivateSubmit"
