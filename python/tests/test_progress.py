"""The progress display: one redrawn line on a terminal, 10% lines otherwise, HTML in Jupyter;
it reads only the run's counters."""

import io

from hazel._progress import Progress


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_terminal_line_is_redrawn_and_closed():
    stream = Terminal()
    shown = Progress([1, 2], warmup=10, draws=10, stream=stream)
    assert shown.mode == "terminal"
    shown.update([(5, True, 0), (12, False, 1)])
    shown.update([(20, False, 2), (20, False, 1)])
    shown.close([(20, False, 2), (20, False, 1)])
    text = stream.getvalue()
    assert text.count("\r") == 3 and text.endswith("\n")
    assert "1 in warmup" in text and "3 divergent" in text and "100% (done)" in text


def test_lines_every_ten_percent():
    stream = io.StringIO()
    shown = Progress([1], warmup=50, draws=50, stream=stream)
    assert shown.mode == "lines"
    for it in range(0, 101, 5):
        shown.update([(it, it <= 50, 0)])
    lines = stream.getvalue().splitlines()
    assert len(lines) == 11 and lines[-1].startswith("1 chains: 100%")


def test_notebook_html_and_off():
    shown = Progress([1, 2], warmup=5, draws=5, mode="notebook")
    html = shown._html([(3, True, 0), (10, False, 4)])
    assert "chain 1" in html and "warmup" in html and "done" in html and "4 divergent" in html
    quiet = Progress([1], warmup=5, draws=5, mode="off", stream=io.StringIO())
    quiet.update([(3, True, 0)])
    quiet.close([(10, False, 0)], "finished")
    assert quiet.stream.getvalue() == ""
