//! Small helpers for the text vnetlab shows people: user input echoed in an error is clipped, so
//! a hostile or mistaken 50 MB argument never comes back whole.

/// At most this many characters of user input appear in a message.
pub const CLIP: usize = 80;

/// `s` as it may appear in a message: at most `CLIP` characters, control characters escaped.
pub fn clip(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars().take(CLIP) {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    if s.chars().count() > CLIP {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn long_and_odd_input_is_clipped() {
        assert_eq!(super::clip("abc"), "abc");
        let long = "x".repeat(10_000);
        assert_eq!(super::clip(&long).chars().count(), super::CLIP + 1);
        assert_eq!(super::clip("a\nb"), "a\\nb");
    }
}
