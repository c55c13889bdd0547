//! Example tests written beside a fixture: pytest, node:test and Rust, each loading the fixture
//! and checking its signature with the scheme's own recipe.

/// The test snippets that come with a fixture, as (file name, contents), from the templates in
/// `assets/snippets/`.
pub fn snippets(fixture_file: &str) -> Vec<(String, String)> {
    let fill = |template: &str| template.replace("{{FIXTURE}}", fixture_file);
    let stem = fixture_file
        .trim_end_matches(".json")
        .replace(['-', '.'], "_");
    vec![
        (
            format!("test_{stem}.py"),
            fill(include_str!("../../assets/snippets/pytest.py")),
        ),
        (
            format!("{stem}.test.mjs"),
            fill(include_str!("../../assets/snippets/node_test.mjs")),
        ),
        (
            format!("{stem}_test.rs"),
            fill(include_str!("../../assets/snippets/rust_test.rs")),
        ),
    ]
}
