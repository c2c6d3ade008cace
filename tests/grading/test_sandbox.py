"""The sandbox's mounts, in the order bubblewrap makes them (a later mount covers an earlier one)."""

from ppedu.grading.sandbox import HOME, Sandbox, _readable


def test_an_environment_installed_under_tmp_or_home_is_not_covered_by_the_private_ones(tmp_path):
    # A clone in /tmp (as CI's may be) has its .venv there: the private /tmp must not hide it.
    args = Sandbox(tmp_path, tmp_path).wrap(["python"])
    private = max(i for i, a in enumerate(args) if a == "--tmpfs" and args[i + 1] in ("/tmp", HOME))
    for path in _readable():
        bound = [i for i, a in enumerate(args) if a == "--ro-bind" and args[i + 1] == path]
        assert bound and min(bound) > private, f"{path} is bound before the private /tmp and home"
