//! Terminal output → styled text: SGR colour and weight codes become span styles, every other escape sequence and
//! control character is dropped, and a carriage return overwrites its line as a terminal would. Pure, so it is tested
//! natively.

/// One of the 16 terminal colours (0–7 normal, 8–15 bright). 256-colour and true-colour codes are mapped to the
/// nearest of them: the page's CSP allows no inline styles, and a theme can then restyle all of them.
pub type Colour = u8;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Style {
    pub fg: Option<Colour>,
    pub bg: Option<Colour>,
    pub bold: bool,
    pub dim: bool,
    pub italic: bool,
    pub underline: bool,
    pub strike: bool,
    pub inverse: bool,
}

impl Style {
    /// The CSS classes of this style (see the "Tool rows" section of `style/main.css`); empty for plain text.
    pub fn classes(&self) -> String {
        let (fg, bg) = if self.inverse {
            (self.bg.or(Some(INVERSE_FG)), self.fg.or(Some(INVERSE_BG)))
        } else {
            (self.fg, self.bg)
        };
        let mut classes = Vec::new();
        if let Some(fg) = fg {
            classes.push(format!("ansi-fg-{fg}"));
        }
        if let Some(bg) = bg {
            classes.push(format!("ansi-bg-{bg}"));
        }
        for (on, class) in [
            (self.bold, "ansi-bold"),
            (self.dim, "ansi-dim"),
            (self.italic, "ansi-italic"),
            (self.underline, "ansi-underline"),
            (self.strike, "ansi-strike"),
        ] {
            if on {
                classes.push(class.to_owned());
            }
        }
        classes.join(" ")
    }

    fn apply_sgr(&mut self, params: &str) {
        // `38:5:n` (colon sub-parameters) means the same as `38;5;n`.
        let codes: Vec<Option<u32>> =
            params.split([';', ':']).map(|p| if p.is_empty() { Some(0) } else { p.parse().ok() }).collect();
        let mut i = 0;
        while i < codes.len() {
            let Some(code) = codes[i] else {
                i += 1;
                continue;
            };
            match code {
                0 => *self = Style::default(),
                1 => self.bold = true,
                2 => self.dim = true,
                3 => self.italic = true,
                4 => self.underline = true,
                7 => self.inverse = true,
                9 => self.strike = true,
                22 => {
                    self.bold = false;
                    self.dim = false;
                }
                23 => self.italic = false,
                24 => self.underline = false,
                27 => self.inverse = false,
                29 => self.strike = false,
                30..=37 => self.fg = Some((code - 30) as u8),
                39 => self.fg = None,
                40..=47 => self.bg = Some((code - 40) as u8),
                49 => self.bg = None,
                90..=97 => self.fg = Some((code - 90 + 8) as u8),
                100..=107 => self.bg = Some((code - 100 + 8) as u8),
                38 | 48 => {
                    let (colour, used) = extended_colour(&codes[i + 1..]);
                    i += used;
                    if let Some(colour) = colour {
                        if code == 38 {
                            self.fg = Some(colour);
                        } else {
                            self.bg = Some(colour);
                        }
                    }
                }
                _ => {}
            }
            i += 1;
        }
    }
}

/// Inverse video without explicit colours swaps the theme's text and background.
const INVERSE_FG: Colour = 0;
const INVERSE_BG: Colour = 7;

/// The colour of `5;n` or `2;r;g;b` after a 38/48, and how many parameters it took.
fn extended_colour(rest: &[Option<u32>]) -> (Option<Colour>, usize) {
    match rest.first().copied().flatten() {
        Some(5) => (rest.get(1).copied().flatten().map(indexed_colour), 2),
        Some(2) => {
            let channel = |i: usize| rest.get(i).copied().flatten().unwrap_or(0).min(255) as u8;
            (Some(nearest_basic(channel(1), channel(2), channel(3))), 4)
        }
        _ => (None, rest.len()),
    }
}

fn indexed_colour(index: u32) -> Colour {
    match index {
        0..=15 => index as u8,
        16..=231 => {
            let cube = index - 16;
            let level = |v: u32| if v == 0 { 0 } else { (55 + v * 40) as u8 };
            nearest_basic(level(cube / 36), level(cube / 6 % 6), level(cube % 6))
        }
        232..=255 => {
            let grey = (8 + (index - 232) * 10) as u8;
            nearest_basic(grey, grey, grey)
        }
        _ => 7,
    }
}

/// The xterm values of the 16 colours, to find the nearest one.
const BASIC_RGB: [(u8, u8, u8); 16] = [
    (0, 0, 0),
    (205, 0, 0),
    (0, 205, 0),
    (205, 205, 0),
    (0, 0, 238),
    (205, 0, 205),
    (0, 205, 205),
    (229, 229, 229),
    (127, 127, 127),
    (255, 0, 0),
    (0, 255, 0),
    (255, 255, 0),
    (92, 92, 255),
    (255, 0, 255),
    (0, 255, 255),
    (255, 255, 255),
];

fn nearest_basic(r: u8, g: u8, b: u8) -> Colour {
    let distance = |&(cr, cg, cb): &(u8, u8, u8)| {
        let d = |a: u8, b: u8| (i32::from(a) - i32::from(b)).pow(2);
        d(r, cr) + d(g, cg) + d(b, cb)
    };
    BASIC_RGB.iter().enumerate().min_by_key(|(_, rgb)| distance(rgb)).map_or(7, |(i, _)| i as u8)
}

/// A run of text in one style.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    pub text: String,
    pub style: Style,
}

/// The output as lines of styled spans. Styles carry over line ends, as in a terminal.
pub fn parse_lines(output: &str) -> Vec<Vec<Span>> {
    let mut lines = vec![Vec::new()];
    let mut style = Style::default();
    let mut text = String::new();
    let mut chars = output.chars().peekable();
    let flush = |lines: &mut Vec<Vec<Span>>, text: &mut String, style: Style| {
        if text.is_empty() {
            return;
        }
        let line = lines.last_mut().expect("there is always a current line");
        match line.last_mut() {
            Some(last) if last.style == style => last.text.push_str(text),
            Some(_) | None => line.push(Span { text: text.clone(), style }),
        }
        text.clear();
    };
    while let Some(c) = chars.next() {
        match c {
            '\n' => {
                flush(&mut lines, &mut text, style);
                lines.push(Vec::new());
            }
            '\r' if chars.peek() == Some(&'\n') => {}
            // A lone carriage return starts the line over: progress bars leave only their last state.
            '\r' => {
                text.clear();
                lines.last_mut().expect("there is always a current line").clear();
            }
            '\t' => text.push(c),
            '\u{1b}' => match chars.next() {
                Some('[') => {
                    let (params, last) = take_csi(&mut chars);
                    if last == Some('m') {
                        flush(&mut lines, &mut text, style);
                        style.apply_sgr(&params);
                    }
                }
                Some(']') | Some('P') | Some('X') | Some('^') | Some('_') => skip_string(&mut chars),
                // `ESC ( B` and the like: intermediates, then one final character.
                Some(c) if ('\u{20}'..='\u{2f}').contains(&c) => {
                    while chars.next_if(|c| ('\u{20}'..='\u{2f}').contains(c)).is_some() {}
                    chars.next();
                }
                Some(_) | None => {}
            },
            '\u{9b}' => {
                let (params, last) = take_csi(&mut chars);
                if last == Some('m') {
                    flush(&mut lines, &mut text, style);
                    style.apply_sgr(&params);
                }
            }
            c if c.is_control() => {}
            c => text.push(c),
        }
    }
    flush(&mut lines, &mut text, style);
    if lines.len() > 1 && lines.last().is_some_and(Vec::is_empty) && output.ends_with('\n') {
        lines.pop();
    }
    lines
}

/// Reads a control sequence's parameters up to its final byte (`@`–`~`), which it returns.
fn take_csi(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> (String, Option<char>) {
    let mut params = String::new();
    for c in chars.by_ref() {
        if ('\u{40}'..='\u{7e}').contains(&c) {
            return (params, Some(c));
        }
        params.push(c);
    }
    (params, None)
}

/// Skips an OSC, DCS or similar string up to BEL or `ESC \`.
fn skip_string(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    while let Some(c) = chars.next() {
        match c {
            '\u{7}' | '\u{9c}' => return,
            '\u{1b}' => {
                chars.next_if_eq(&'\\');
                return;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The output without any escape sequence, as plain lines joined by `\n`.
    fn plain_text(output: &str) -> String {
        parse_lines(output)
            .iter()
            .map(|line| line.iter().map(|span| span.text.as_str()).collect::<String>())
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn styled(text: &str, style: Style) -> Span {
        Span { text: text.into(), style }
    }

    #[test]
    fn sgr_colours_and_weights_become_styles_and_reset_clears_them() {
        let lines = parse_lines("\x1b[32mgreen\x1b[0m and \x1b[1;31mbold red\x1b[22m red\x1b[m plain");
        let green = Style { fg: Some(2), ..Style::default() };
        let bold_red = Style { fg: Some(1), bold: true, ..Style::default() };
        let red = Style { fg: Some(1), ..Style::default() };
        assert_eq!(
            lines,
            vec![vec![
                styled("green", green),
                styled(" and ", Style::default()),
                styled("bold red", bold_red),
                styled(" red", red),
                styled(" plain", Style::default()),
            ]]
        );
        assert_eq!(green.classes(), "ansi-fg-2");
        assert_eq!(bold_red.classes(), "ansi-fg-1 ansi-bold");
    }

    #[test]
    fn bright_256_and_true_colours_map_to_the_sixteen() {
        let fg = |input: &str| parse_lines(input)[0][0].style.fg;
        assert_eq!(fg("\x1b[94mx"), Some(12));
        assert_eq!(fg("\x1b[38;5;9mx"), Some(9));
        assert_eq!(fg("\x1b[38;5;196mx"), Some(9), "cube red is bright red");
        assert_eq!(fg("\x1b[38;2;0;200;0mx"), Some(2));
        assert_eq!(fg("\x1b[38:5:4mx"), Some(4), "colon sub-parameters");
        assert_eq!(parse_lines("\x1b[48;5;232mx")[0][0].style.bg, Some(0));
        assert_eq!(parse_lines("\x1b[44;39mx")[0][0].style, Style { bg: Some(4), ..Style::default() });
    }

    #[test]
    fn other_escape_sequences_and_controls_are_stripped() {
        let input = "\x1b]0;title\x07a\x1b[2Kb\x1b[1Ac\x1b(Bd\x07e\x08f\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\";
        assert_eq!(plain_text(input), "abcdeflink");
        assert!(parse_lines(input)[0].iter().all(|span| span.style == Style::default()));
        assert_eq!(plain_text("unterminated \x1b["), "unterminated ");
        assert_eq!(plain_text("\u{9b}31mred"), "red");
    }

    #[test]
    fn styles_carry_over_lines_and_carriage_returns_overwrite() {
        let lines = parse_lines("\x1b[31mone\ntwo\x1b[0m\n 10%\r 50%\r100%\r\nend\n");
        let red = Style { fg: Some(1), ..Style::default() };
        assert_eq!(lines.len(), 4);
        assert_eq!(lines[0], vec![styled("one", red)]);
        assert_eq!(lines[1], vec![styled("two", red)]);
        assert_eq!(lines[2], vec![styled("100%", Style::default())]);
        assert_eq!(lines[3], vec![styled("end", Style::default())]);
        assert_eq!(parse_lines(""), vec![Vec::<Span>::new()]);
        assert_eq!(parse_lines("a\n\n").len(), 2);
    }

    #[test]
    fn markup_is_plain_text() {
        let lines = parse_lines("<img src=x onerror=alert(1)>");
        assert_eq!(lines, vec![vec![styled("<img src=x onerror=alert(1)>", Style::default())]]);
    }

    #[test]
    fn inverse_swaps_colours() {
        let style = parse_lines("\x1b[7;31mx")[0][0].style;
        assert_eq!(style.classes(), "ansi-fg-0 ansi-bg-1");
    }
}
