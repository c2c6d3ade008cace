# Two commands set everything up on a fresh machine: `make lab` and `make test`.
# `make lab HOST=0.0.0.0 PORT=9000 OPEN=no` on a server without a screen (student/lab.mk, shared with the students' release).
EXTRAS := [test]
include student/lab.mk
# nbgrader's exchange for the whole machine (`sudo make exchange`): the shared folder, and the system-wide
# nbgrader config that points every user's nbgrader at it (JUPYTER_SYSTEM_CONFIG=/etc/jupyter is on Jupyter's path).
EXCHANGE ?= /srv/nbgrader/exchange
JUPYTER_SYSTEM_CONFIG ?= /etc/jupyter

.PHONY: test test-browser chromium bubblewrap bench slides sheet student-release exchange clean

# The course's lab also sandboxes `ppedu check` and the formgrader's autograde button.
lab: bubblewrap

# `make test` runs every test, the browser tests in tests/browser/ included.
test: install chromium bubblewrap
	$(BIN)/python -m pytest

test-browser: install chromium
	$(BIN)/python -m pytest tests/browser

# Debian's Chromium for the browser tests (never Playwright's own download); they skip if it cannot be had.
chromium:
	@[ -x /usr/bin/chromium ] || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -qq --no-install-recommends chromium; } \
		|| echo "Chromium could not be installed: the browser tests will be skipped"

# Debian's bubblewrap: every notebook the autograder (or `ppedu check`) runs is sandboxed with it;
# without it `ppedu grade` refuses to grade (unless --no-sandbox) and its tests fail.
bubblewrap:
	@[ -x /usr/bin/bwrap ] || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -qq --no-install-recommends bubblewrap; } \
		|| echo "bubblewrap could not be installed: autograding will refuse to run unsandboxed"

bench: install bubblewrap
	$(BIN)/python benchmarks/bench_simulate.py
	$(BIN)/python benchmarks/bench_widgets.py
	$(BIN)/python benchmarks/bench_mnist.py
	$(BIN)/python benchmarks/bench_grade.py

# Static reveal.js decks of every chapter that open offline (reveal.js etc. from npm into build/slides).
slides: install
	$(BIN)/python -m ppedu.slides --execute --out build/slides notebooks/*.ipynb

# The students' copy of the course (chapters, exercises/, the library; no solutions, keys or grader/).
STUDENT_RELEASE ?= build/student
student-release:
	$(PYTHON) student/build.py "$(STUDENT_RELEASE)"

# Leaves alone a system-wide nbgrader_config.py that it did not write.
SYSTEM_NBGRADER := $(JUPYTER_SYSTEM_CONFIG)/nbgrader_config.py
exchange:
	@[ ! -e "$(SYSTEM_NBGRADER)" ] || grep -q "make exchange" "$(SYSTEM_NBGRADER)" || \
		{ echo "$(SYSTEM_NBGRADER) exists: add c.Exchange.root = \"$(EXCHANGE)\" to it yourself" >&2; exit 2; }
	mkdir -p "$(EXCHANGE)" "$(JUPYTER_SYSTEM_CONFIG)"
	chmod 777 "$(EXCHANGE)"
	printf '%s\n' "# Written by ppedu's \`make exchange\`: every user's nbgrader uses the course's exchange." \
		"c.Exchange.root = \"$(EXCHANGE)\"" > "$(SYSTEM_NBGRADER)"

# The formula sheet as one printable page (open it in a browser, print to PDF).
sheet: install
	$(BIN)/python -m ppedu.sheet --out build/formula-sheet.html

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
