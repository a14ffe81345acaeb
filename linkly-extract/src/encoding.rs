//! Text encoding detection (placeholder).
