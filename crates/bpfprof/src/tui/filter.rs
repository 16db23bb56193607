//! The `/` filter both interfaces share: typed after `/`, applied with
//! Enter, cancelled with Esc; keys typed meanwhile are text (`q` too).

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// The filter in force (empty: none).
    pub text: String,
    /// The filter being typed after `/`.
    pub editing: Option<String>,
}

/// What a key did to the filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Edit {
    /// Not the filter's key: the caller's to handle.
    Pass,
    /// Taken (typed, started or cancelled).
    Taken,
    /// The typed filter is now in force.
    Applied,
    /// Ctrl-C while typing.
    Quit,
}

impl Filter {
    pub fn key(&mut self, k: KeyEvent) -> Edit {
        let ctrl_c = k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL);
        let Some(text) = &mut self.editing else {
            if k.code == KeyCode::Char('/') {
                self.editing = Some(self.text.clone());
                return Edit::Taken;
            }
            return Edit::Pass;
        };
        match k.code {
            _ if ctrl_c => return Edit::Quit,
            KeyCode::Enter => {
                self.text = std::mem::take(text);
                self.editing = None;
                return Edit::Applied;
            }
            KeyCode::Esc => self.editing = None,
            KeyCode::Backspace => {
                text.pop();
            }
            KeyCode::Char(c) => text.push(c),
            _ => {}
        }
        Edit::Taken
    }

    /// Whether any of `texts` passes the filter.
    pub fn keeps<'a>(&self, mut texts: impl Iterator<Item = &'a str>) -> bool {
        self.text.is_empty() || texts.any(|t| t.contains(self.text.as_str()))
    }

    /// The key line while typing, or the filter in force after `help`.
    pub fn help_line(&self, what: &str, help: &str) -> String {
        match &self.editing {
            Some(t) => format!("filter ({what}, Enter applies, Esc cancels): {t}_"),
            None if self.text.is_empty() => help.to_string(),
            None => format!("{help}  [filter: {}]", self.text),
        }
    }
}
