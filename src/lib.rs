//! cachelayout
