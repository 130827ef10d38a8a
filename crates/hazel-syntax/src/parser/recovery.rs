//! Error recovery: after a reported error the parser skips to a statement boundary (the next
//! `;` at this nesting level, a balanced `{...}`, or the `}` that closes the block) or, outside
//! any block, to the next block header, so independent errors in one file are all reported.

use super::*;

impl Parser<'_> {
    /// Skips to a statement boundary: past the next `;` at this nesting level, past a
    /// balanced `{...}`, or up to (not past) a `}` that closes the enclosing block.
    pub(super) fn synchronize(&mut self) {
        let mut depth = 0usize;
        loop {
            match self.peek() {
                TokenKind::Eof => return,
                TokenKind::Semi if depth == 0 => {
                    self.bump();
                    return;
                }
                TokenKind::LBrace => depth += 1,
                // Closes the enclosing block: leave it for the block's loop.
                TokenKind::RBrace if depth == 0 => return,
                TokenKind::RBrace => {
                    depth -= 1;
                    if depth == 0 {
                        self.bump();
                        return;
                    }
                }
                _ => {}
            }
            self.bump();
        }
    }

    pub(super) fn skip_to_block_start(&mut self) {
        let mut depth = 0usize;
        loop {
            match self.peek() {
                TokenKind::Eof => return,
                TokenKind::LBrace => depth += 1,
                TokenKind::RBrace => depth = depth.saturating_sub(1),
                TokenKind::Ident(w)
                    if depth == 0
                        && matches!(
                            w.as_str(),
                            "functions"
                                | "data"
                                | "transformed"
                                | "parameters"
                                | "model"
                                | "generated"
                        ) =>
                {
                    return
                }
                _ => {}
            }
            self.bump();
        }
    }

    /// At the end of a `{ ... }` body (a block or the functions block): consumes the closing
    /// `}`, or reports the end of the file as "unexpected end of file: {unclosed}"; false while
    /// the body goes on.
    pub(super) fn body_ends(&mut self, unclosed: &str) -> bool {
        match self.peek() {
            TokenKind::RBrace => {
                self.bump();
                true
            }
            TokenKind::Eof => {
                let span = self.span();
                self.diagnostics.push(
                    Diagnostic::error(span, format!("unexpected end of file: {unclosed}"))
                        .with_hint("add the missing `}`"),
                );
                true
            }
            _ => false,
        }
    }

    /// After an item of a body failed to parse from token `before`: skips to a statement
    /// boundary, and past one token when that made no progress, so the body's loop moves on.
    pub(super) fn recover_in_body(&mut self, before: usize) {
        self.synchronize();
        if self.pos == before && !self.at(&TokenKind::RBrace) {
            self.bump();
        }
    }
}
