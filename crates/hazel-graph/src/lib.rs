//! Checked program + data to a static op graph that is its own reverse-mode tape; constraint transforms; implements Model.
