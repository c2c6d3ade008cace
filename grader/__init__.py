"""The instructors' side of grading: what decides a grade, kept out of the ppedu package students install."""
