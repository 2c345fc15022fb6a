//! Text built in `const` evaluation, for compile-time error messages with
//! numbers in them (`panic!("{}", msg.as_str())` accepts a computed `&str`).

/// Longest message; longer text is cut and ends in `...`.
const CAPACITY: usize = 2048;
const ELLIPSIS: &[u8] = b"...";

/// A fixed-capacity string that `const fn`s can append to.
#[derive(Clone, Copy)]
pub struct Message {
    buf: [u8; CAPACITY],
    len: usize,
    truncated: bool,
}

impl Message {
    pub const fn new() -> Self {
        Message {
            buf: [0; CAPACITY],
            len: 0,
            truncated: false,
        }
    }

    /// Appends `s`; text past the capacity is cut (between characters) and
    /// replaced by `...`.
    pub const fn str(mut self, s: &str) -> Self {
        if self.truncated {
            return self;
        }
        let bytes = s.as_bytes();
        let room = CAPACITY - ELLIPSIS.len();
        let mut i = 0;
        while i < bytes.len() {
            if self.len == room {
                // Do not leave half a character behind.
                while i > 0 && (bytes[i] & 0xC0) == 0x80 {
                    i -= 1;
                    self.len -= 1;
                }
                let mut k = 0;
                while k < ELLIPSIS.len() {
                    self.buf[self.len] = ELLIPSIS[k];
                    self.len += 1;
                    k += 1;
                }
                self.truncated = true;
                break;
            }
            self.buf[self.len] = bytes[i];
            self.len += 1;
            i += 1;
        }
        self
    }

    /// Appends `n` in decimal.
    pub const fn num(self, mut n: usize) -> Self {
        let mut digits = [0u8; 20];
        let mut k = 0;
        loop {
            digits[k] = b'0' + (n % 10) as u8;
            k += 1;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        let mut text = [0u8; 20];
        let mut i = 0;
        while i < k {
            text[i] = digits[k - 1 - i];
            i += 1;
        }
        match ::core::str::from_utf8(text.split_at(k).0) {
            Ok(s) => self.str(s),
            Err(_) => self,
        }
    }

    /// Appends `` `s` ``.
    pub const fn code(self, s: &str) -> Self {
        self.str("`").str(s).str("`")
    }

    /// Whether text was cut: nothing appended since shows.
    pub const fn is_full(&self) -> bool {
        self.truncated
    }

    /// The text.
    pub const fn as_str(&self) -> &str {
        match ::core::str::from_utf8(self.buf.split_at(self.len).0) {
            Ok(s) => s,
            Err(_) => "",
        }
    }
}

impl Default for Message {
    fn default() -> Self {
        Self::new()
    }
}
