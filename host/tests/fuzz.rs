//! Property tests for every parser that reads what a client sends: request parameters and their
//! coercions, durations, task lists, OAuth scopes, SSH and GPG keys, git's pkt-lines and the
//! commands SSH clients ask to run. Arbitrary input must give
//! a value or a refusal (which the API turns into a 4xx), never a panic, and the accepted values
//! must hold the invariants the handlers rely on.

use proptest::prelude::*;
use serde_json::{Map, Value};
use trellis::testing::ssh_command as command;
use trellis::testing::{Params, parse_bool, parse_date, parse_datetime};
use trellis_git::pktline;

/// Parameter names the handlers read, with the bracket forms Grape accepts.
const NAMES: &[&str] = &[
    "title",
    "labels",
    "labels[]",
    "assignee_ids",
    "assignee_ids[]",
    "page",
    "per_page",
    "custom_attributes[key]",
    "custom_attributes",
    "due_date",
    "created_after",
    "state",
    "confidential",
    "a[b][c]",
    "[]",
    "a[",
    "]",
    "",
];

/// Query strings built from names the handlers read and arbitrary values, encoded or raw.
fn query() -> impl Strategy<Value = String> {
    let pair = (prop::sample::select(NAMES), any::<String>(), any::<bool>()).prop_map(
        |(name, value, encode)| {
            if encode {
                form_urlencoded::Serializer::new(String::new())
                    .append_pair(name, &value)
                    .finish()
            } else {
                format!("{name}={value}")
            }
        },
    );
    prop_oneof![
        prop::collection::vec(pair, 0..8).prop_map(|pairs| pairs.join("&")),
        any::<String>(),
    ]
}

/// Arbitrary JSON, a few levels deep.
fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        any::<String>().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(any::<String>(), inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Every accessor on every name: each answers a value or an error, none panics.
fn read_everything(params: &Params) {
    for name in NAMES.iter().copied().chain(["missing"]) {
        let _ = params.string(name);
        let _ = params.required_string(name);
        let _ = params.present_string(name);
        if let Ok(Some(flag)) = params.bool(name) {
            let _ = flag;
        }
        let _ = params.int(name);
        let _ = params.float(name);
        let _ = params.one_of(name, &["opened", "closed"]);
        let _ = params.string_list(name);
        let _ = params.int_list(name);
        let _ = params.object(name);
        let _ = params.date(name);
        let _ = params.datetime(name);
        let _ = params.raw(name);
        let _ = params.has(name);
    }
    let _ = params.custom_attributes();
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn query_strings_never_panic(q in query()) {
        read_everything(&Params::from_query(Some(&q)));
    }

    #[test]
    fn json_bodies_never_panic(body in prop::collection::btree_map(
        prop::sample::select(NAMES).prop_map(String::from), json(), 0..8)) {
        let values: Map<String, Value> = body.into_iter().collect();
        read_everything(&Params::from_json_object(values));
    }

    #[test]
    fn an_integer_parameter_reads_back_exactly(n in any::<i64>()) {
        let params = Params::from_query(Some(&format!("page={n}")));
        prop_assert_eq!(params.int("page").unwrap(), Some(n));
    }

    #[test]
    fn scalar_coercions_never_panic(s in any::<String>()) {
        let _ = parse_bool(&s);
        let _ = parse_date(&s);
        let _ = parse_datetime(&s);
        let _ = trellis::testing::parse_duration(&s);
        let scopes = trellis::testing::parse_scopes(&s);
        prop_assert!(scopes.iter().all(|scope| !scope.is_empty() && !scope.contains(' ')));
    }

    #[test]
    fn task_lists_count_what_they_list(lines in prop::collection::vec(
        prop_oneof![
            Just("- [ ] todo".to_string()), Just("* [x] done".to_string()),
            Just("1. [~] n/a".to_string()), Just("```".to_string()),
            any::<String>(),
        ], 0..20)) {
        let description = lines.join("\n");
        let items = trellis::testing::task_items(Some(&description));
        let (total, done) = trellis::testing::task_counts(Some(&description));
        prop_assert!(done <= total);
        prop_assert_eq!(total as usize, items.len());
    }

    #[test]
    fn ssh_keys_never_panic(
        algorithm in prop::sample::select(&["ssh-rsa", "ssh-ed25519", "ecdsa-sha2-nistp256",
            "ssh-dss", "sk-ssh-ed25519@openssh.com", "x"][..]),
        blob in prop::collection::vec(any::<u8>(), 0..600),
        comment in any::<String>(),
        raw in any::<String>()) {
        use base64::Engine as _;
        let line = format!("{algorithm} {} {comment}",
            base64::engine::general_purpose::STANDARD.encode(&blob));
        let _ = trellis::testing::parse_ssh_key(&line);
        let _ = trellis::testing::parse_ssh_key(&raw);
    }

    #[test]
    fn gpg_keys_never_panic(body in prop::collection::vec(any::<u8>(), 0..2000), raw in any::<String>()) {
        use base64::Engine as _;
        let armored = format!(
            "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n{}\n-----END PGP PUBLIC KEY BLOCK-----",
            base64::engine::general_purpose::STANDARD.encode(&body));
        let _ = trellis::testing::parse_gpg_key(&armored);
        let _ = trellis::testing::parse_gpg_key(&raw);
    }

    #[test]
    fn pkt_lines_never_read_past_their_buffer(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        if let Ok(Some((_, used))) = pktline::parse(&bytes) {
            prop_assert!(used <= bytes.len());
        }
        if let Ok(Some((_, _, used))) = pktline::receive_commands(&bytes) {
            prop_assert!(used <= bytes.len());
        }
    }

    #[test]
    fn pkt_line_streams_of_random_packets_parse_back(payloads in prop::collection::vec(
        prop::collection::vec(any::<u8>(), 0..300), 0..8)) {
        let mut stream: Vec<u8> = payloads.iter().flat_map(|p| pktline::data(p)).collect();
        stream.extend_from_slice(pktline::FLUSH);
        let mut offset = 0;
        for payload in &payloads {
            let (packet, used) = pktline::parse(&stream[offset..]).unwrap().unwrap();
            prop_assert_eq!(packet, pktline::Packet::Data(payload));
            offset += used;
        }
        prop_assert_eq!(pktline::parse(&stream[offset..]).unwrap(), Some((pktline::Packet::Flush, 4)));
        // Whatever the payloads, the push-command reader answers, never panics.
        let _ = pktline::receive_commands(&stream);
    }

    #[test]
    fn ssh_commands_never_panic_and_name_only_plain_project_paths(
        raw in prop::collection::vec(any::<u8>(), 0..300),
        program in prop::sample::select(&["git-upload-pack", "git-receive-pack",
            "git-upload-archive", "git-upload-pack.exe", "sh"][..]),
        argument in any::<String>(),
    ) {
        let _ = command::parse(&raw);
        let line = format!("{program} {argument}");
        if let Some(parsed) = command::parse(line.as_bytes()) {
            let project = &parsed.project;
            prop_assert!(project.contains('/'));
            prop_assert!(!project.starts_with('/') && !project.ends_with(".git"));
            prop_assert!(project.split('/').all(|s| !s.is_empty() && s != "." && s != ".."));
            prop_assert!(project.bytes().all(|b| b.is_ascii_alphanumeric() || b"_-./".contains(&b)));
        }
    }

    #[test]
    fn quoted_project_paths_parse_back(
        segments in prop::collection::vec("[A-Za-z0-9_][A-Za-z0-9_.-]{0,12}", 2..5),
        git_suffix in any::<bool>(),
        slash in any::<bool>(),
    ) {
        let path = segments.join("/");
        prop_assume!(segments.iter().all(|s| s != "." && s != ".." && !s.ends_with(".git")));
        let quoted = format!("{}{}{}", if slash { "/" } else { "" }, path,
            if git_suffix { ".git" } else { "" });
        let parsed = command::parse(format!("git-upload-pack '{quoted}'").as_bytes());
        prop_assert_eq!(parsed.map(|c| c.project), Some(path));
    }
}
