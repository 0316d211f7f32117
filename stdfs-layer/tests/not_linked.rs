//! A test binary of the same package that never names the crate: rustc
//! links no crate a binary does not use, so its file functions are
//! glibc's, and a path under the layer's root is the real system's.

#[test]
fn a_binary_that_does_not_name_the_layer_keeps_glibcs_file_functions() {
    let missing = std::fs::metadata("/sim-db/anything").unwrap_err();
    assert_eq!(missing.kind(), std::io::ErrorKind::NotFound, "the real disk answered: {missing}");
}
