"""Checks of a student's work against what ppedu computes, with messages that teach."""
