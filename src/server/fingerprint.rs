//! Content fingerprints for ETags, shared by the build script (embedded assets) and the server (assets on disk).

/// FNV-1a over the bytes; ETags need change detection, not collision resistance against an attacker.
pub fn fingerprint(bytes: &[u8]) -> String {
    let hash = bytes
        .iter()
        .fold(0xcbf2_9ce4_8422_2325_u64, |hash, &byte| (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3));
    format!("{hash:016x}-{:x}", bytes.len())
}
