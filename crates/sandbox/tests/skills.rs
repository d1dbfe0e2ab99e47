//! Installing skills from git, through the public API: real local repositories (`file://`), a test
//! provider whose sandbox is a host directory.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use tempfile::TempDir;
use tokio_util::sync::CancellationToken;
use trueforge_sandbox::{
    Download, ExecOutput, ExecRequest, FileStat, GitSkill, SandboxError, SandboxLayout, SandboxOwner, SandboxProvider,
    SkillError, SkillSources, fetch_skill, install_skills, skills_prompt_section,
};

// ---------------------------------------------------------------------------------------------------------
// A provider whose sandbox is a directory on this machine. Layout paths are real host paths, so `exec`
// can run the command with `sh -c` as it is. Counts uploads and execs.

struct DirProvider {
    layout: SandboxLayout,
    uploads: Mutex<Vec<String>>,
    execs: AtomicUsize,
}

impl DirProvider {
    fn new(root: &Path) -> Self {
        let at = |name: &str| root.join(name).to_str().unwrap().to_owned();
        std::fs::create_dir_all(root.join("workspace")).unwrap();
        Self {
            layout: SandboxLayout {
                workspace: at("workspace"),
                uploads: at("uploads"),
                tool_results: at("tool-results"),
                skills: at("skills"),
            },
            uploads: Mutex::new(Vec::new()),
            execs: AtomicUsize::new(0),
        }
    }

    fn skills(&self) -> PathBuf {
        PathBuf::from(&self.layout.skills)
    }

    fn upload_count(&self) -> usize {
        self.uploads.lock().unwrap().len()
    }

    fn take_uploads(&self) -> Vec<String> {
        std::mem::take(&mut *self.uploads.lock().unwrap())
    }
}

fn not_found(path: &str, error: &std::io::Error) -> SandboxError {
    if error.kind() == std::io::ErrorKind::NotFound {
        SandboxError::FileNotFound(path.to_owned())
    } else {
        SandboxError::provider(error)
    }
}

#[async_trait]
impl SandboxProvider for DirProvider {
    fn kind(&self) -> &str {
        "dir"
    }

    fn layout(&self) -> &SandboxLayout {
        &self.layout
    }

    async fn create(&self, owner: &SandboxOwner) -> Result<String, SandboxError> {
        Ok(format!("{}.test", owner.tenant))
    }

    async fn reattach(&self, _owner: &SandboxOwner, _raw_id: &str) -> Result<(), SandboxError> {
        Ok(())
    }

    async fn exec(
        &self,
        _raw_id: &str,
        request: ExecRequest,
        _cancel: &CancellationToken,
    ) -> Result<ExecOutput, SandboxError> {
        self.execs.fetch_add(1, Ordering::SeqCst);
        let cwd = request.cwd.unwrap_or_else(|| self.layout.workspace.clone());
        let output = tokio::process::Command::new("sh")
            .arg("-c")
            .arg(&request.command)
            .current_dir(cwd)
            .envs(&request.env)
            .output();
        let output = tokio::time::timeout(request.timeout, output)
            .await
            .map_err(SandboxError::provider)?
            .map_err(SandboxError::provider)?;
        let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
        text.push_str(&String::from_utf8_lossy(&output.stderr));
        Ok(ExecOutput {
            exit_code: output.status.code(),
            output: text,
            omitted_bytes: 0,
            timed_out: false,
            cancelled: false,
        })
    }

    async fn upload(&self, _raw_id: &str, path: &str, content: Bytes) -> Result<(), SandboxError> {
        trueforge_sandbox::check_sandbox_path(path)?;
        self.uploads.lock().unwrap().push(path.to_owned());
        let path = Path::new(path);
        std::fs::create_dir_all(path.parent().unwrap()).map_err(SandboxError::provider)?;
        std::fs::write(path, content).map_err(SandboxError::provider)
    }

    async fn stat(&self, _raw_id: &str, path: &str) -> Result<FileStat, SandboxError> {
        let metadata = std::fs::metadata(path).map_err(|error| not_found(path, &error))?;
        Ok(FileStat {
            size: metadata.len(),
            is_dir: metadata.is_dir(),
        })
    }

    async fn download(&self, _raw_id: &str, path: &str, max_bytes: u64) -> Result<Download, SandboxError> {
        let metadata = std::fs::metadata(path).map_err(|error| not_found(path, &error))?;
        if metadata.is_dir() {
            return Err(SandboxError::PathIsDirectory(path.to_owned()));
        }
        if metadata.len() > max_bytes {
            return Err(SandboxError::FileTooLarge {
                path: path.to_owned(),
                size: metadata.len(),
                limit: max_bytes,
            });
        }
        let bytes = Bytes::from(std::fs::read(path).map_err(SandboxError::provider)?);
        Ok(Download {
            size: bytes.len() as u64,
            body: Box::pin(futures::stream::iter([Ok(bytes)])),
        })
    }
}

// ---------------------------------------------------------------------------------------------------------
// Local repositories.

/// Runs git for the test's own repositories, away from the host's configuration.
fn git(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .args([
            "-c",
            "user.name=Test",
            "-c",
            "user.email=test@example.org",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

struct Repo {
    dir: TempDir,
}

impl Repo {
    /// A repository with a skill at `skills/pdf`, another directory, and a root file; branch `main`.
    fn new() -> Self {
        let repo = Self {
            dir: tempfile::tempdir().unwrap(),
        };
        git(repo.path(), &["init", "-q", "-b", "main"]);
        // Lets the fetch ask for blobs of the skill's directory only.
        git(repo.path(), &["config", "uploadpack.allowFilter", "true"]);
        repo.write("skills/pdf/SKILL.md", "# PDF v1\n");
        repo.write("skills/pdf/reference/forms.md", "forms\n");
        repo.write("skills/pdf/scripts/fill.sh", "#!/bin/sh\necho fill\n");
        std::fs::set_permissions(
            repo.path().join("skills/pdf/scripts/fill.sh"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        repo.write("skills/docx/SKILL.md", "# DOCX\n");
        repo.write("other/big.txt", "not part of any skill\n");
        repo.write("README.md", "root readme\n");
        repo.commit("one");
        repo
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn url(&self) -> String {
        format!("file://{}", self.path().display())
    }

    fn write(&self, rel: &str, content: &str) {
        let path = self.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    fn commit(&self, message: &str) -> String {
        git(self.path(), &["add", "-A"]);
        git(self.path(), &["commit", "-q", "-m", message]);
        self.head()
    }

    fn head(&self) -> String {
        git(self.path(), &["rev-parse", "HEAD"])
    }

    fn skill(&self, name: &str, path: Option<&str>, git_ref: &str) -> GitSkill {
        GitSkill {
            name: name.to_owned(),
            url: self.url(),
            path: path.map(str::to_owned),
            git_ref: git_ref.to_owned(),
            description: format!("The {name} skill."),
        }
    }
}

struct Fixture {
    _cache: TempDir,
    _sandbox: TempDir,
    sources: SkillSources,
    provider: DirProvider,
}

impl Fixture {
    fn new() -> Self {
        let cache = tempfile::tempdir().unwrap();
        let sandbox = tempfile::tempdir().unwrap();
        let mut sources = SkillSources::new(cache.path().join("skills-cache"));
        sources.allow_file_urls = true;
        sources.timeout = Duration::from_secs(30);
        let provider = DirProvider::new(sandbox.path());
        Self {
            _cache: cache,
            _sandbox: sandbox,
            sources,
            provider,
        }
    }

    async fn install(&self, skills: &[GitSkill]) -> Result<trueforge_sandbox::InstalledSkills, SkillError> {
        install_skills(&self.provider, "t.1", &self.sources, skills).await
    }

    fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.provider.skills().join(rel)).unwrap()
    }

    fn exists(&self, rel: &str) -> bool {
        self.provider.skills().join(rel).symlink_metadata().is_ok()
    }

    /// Every entry under the sandbox's skills directory, relative, sorted.
    fn listing(&self) -> Vec<String> {
        let mut found = Vec::new();
        walk(&self.provider.skills(), &self.provider.skills(), &mut found);
        found.sort();
        found
    }

    /// Whatever the cache directory holds at its top level.
    fn cache_entries(&self) -> Vec<String> {
        match std::fs::read_dir(&self.sources.cache_dir) {
            Ok(entries) => entries
                .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
                .collect(),
            Err(_) => Vec::new(),
        }
    }
}

fn walk(root: &Path, dir: &Path, found: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries {
        let path = entry.unwrap().path();
        found.push(path.strip_prefix(root).unwrap().to_string_lossy().into_owned());
        if path.symlink_metadata().unwrap().is_dir() {
            walk(root, &path, found);
        }
    }
}

// ---------------------------------------------------------------------------------------------------------
// Installing.

#[tokio::test]
async fn installs_a_skill_at_a_branch_with_only_its_directory() {
    let repo = Repo::new();
    let fixture = Fixture::new();
    let skill = repo.skill("pdf", Some("skills/pdf"), "main");

    let installed = fixture.install(std::slice::from_ref(&skill)).await.unwrap();

    assert_eq!(installed.updated, ["pdf"]);
    assert_eq!(installed.skills.len(), 1);
    let pdf = &installed.skills[0];
    assert_eq!(pdf.name, "pdf");
    assert_eq!(pdf.description, "The pdf skill.");
    assert_eq!(pdf.path, format!("{}/pdf", fixture.provider.layout.skills));
    assert_eq!(pdf.commit, repo.head());
    assert_eq!(fixture.read("pdf/SKILL.md"), "# PDF v1\n");
    assert_eq!(fixture.read("pdf/reference/forms.md"), "forms\n");
    let mode = std::fs::metadata(fixture.provider.skills().join("pdf/scripts/fill.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_ne!(mode & 0o111, 0, "the script lost its execute bit");
    // Only the skill and our record: no other directory of the repository, no staging, no script.
    assert_eq!(
        fixture.listing(),
        [
            ".trueforge-skills.json",
            "pdf",
            "pdf/SKILL.md",
            "pdf/reference",
            "pdf/reference/forms.md",
            "pdf/scripts",
            "pdf/scripts/fill.sh",
        ]
    );

    // The host checkout is sparse: the repository's other directories and root files were never
    // checked out.
    let fetched = fetch_skill(&fixture.sources, &skill).await.unwrap();
    let checkout = fetched.dir.parent().unwrap().parent().unwrap();
    let mut top: Vec<String> = std::fs::read_dir(checkout)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    top.sort();
    assert_eq!(top, ["skills"]);
    assert!(!checkout.join("skills/docx").exists());
    assert_eq!(fetched.path.as_deref(), Some("skills/pdf"));
}

#[tokio::test]
async fn installs_at_a_tag_and_at_a_commit_id() {
    let repo = Repo::new();
    let first = repo.head();
    git(repo.path(), &["tag", "light"]);
    git(repo.path(), &["tag", "-a", "v1", "-m", "release 1"]);
    repo.write("skills/pdf/SKILL.md", "# PDF v2\n");
    let second = repo.commit("two");
    let fixture = Fixture::new();

    // An annotated tag resolves to the commit it points to, not the tag object.
    let installed = fixture
        .install(&[repo.skill("pdf", Some("skills/pdf"), "v1")])
        .await
        .unwrap();
    assert_eq!(installed.skills[0].commit, first);
    assert_eq!(fixture.read("pdf/SKILL.md"), "# PDF v1\n");

    let installed = fixture
        .install(&[repo.skill("pdf", Some("skills/pdf"), "light")])
        .await
        .unwrap();
    assert_eq!(installed.skills[0].commit, first);

    let installed = fixture
        .install(&[repo.skill("pdf", Some("skills/pdf"), &second)])
        .await
        .unwrap();
    assert_eq!(installed.skills[0].commit, second);
    assert_eq!(installed.updated, ["pdf"]);
    assert_eq!(fixture.read("pdf/SKILL.md"), "# PDF v2\n");

    // An older commit that no branch or tag names is fetched by its id.
    let installed = fixture
        .install(&[repo.skill("pdf", Some("skills/pdf"), &first)])
        .await
        .unwrap();
    assert_eq!(installed.skills[0].commit, first);
    assert_eq!(fixture.read("pdf/SKILL.md"), "# PDF v1\n");
}

#[tokio::test]
async fn installs_the_repository_root_as_a_skill() {
    let repo = Repo::new();
    repo.write("SKILL.md", "# Root skill\n");
    repo.commit("root skill");
    let fixture = Fixture::new();

    fixture.install(&[repo.skill("whole", None, "main")]).await.unwrap();

    assert_eq!(fixture.read("whole/SKILL.md"), "# Root skill\n");
    assert_eq!(fixture.read("whole/other/big.txt"), "not part of any skill\n");
    assert!(!fixture.exists("whole/.git"), "git's own files were copied");
}

#[tokio::test]
async fn an_unchanged_skill_is_not_uploaded_again() {
    let repo = Repo::new();
    let fixture = Fixture::new();
    let skills = [
        repo.skill("pdf", Some("skills/pdf"), "main"),
        repo.skill("docx", Some("skills/docx"), "main"),
    ];
    fixture.install(&skills).await.unwrap();
    assert!(fixture.provider.upload_count() > 0);
    fixture.provider.take_uploads();
    let execs = fixture.provider.execs.load(Ordering::SeqCst);
    let cached = fixture.cache_entries();

    let installed = fixture.install(&skills).await.unwrap();

    assert_eq!(fixture.provider.upload_count(), 0);
    assert_eq!(fixture.provider.execs.load(Ordering::SeqCst), execs, "nothing to run");
    assert!(installed.updated.is_empty());
    assert!(installed.pruned.is_empty());
    assert_eq!(installed.skills.len(), 2);
    assert_eq!(fixture.cache_entries(), cached, "fetched again");
}

#[tokio::test]
async fn a_moved_branch_reinstalls_only_the_changed_skill() {
    let repo = Repo::new();
    let other = Repo::new();
    let fixture = Fixture::new();
    let skills = [
        repo.skill("pdf", Some("skills/pdf"), "main"),
        other.skill("docx", Some("skills/docx"), "main"),
    ];
    fixture.install(&skills).await.unwrap();
    fixture.provider.take_uploads();

    repo.write("skills/pdf/SKILL.md", "# PDF v2\n");
    std::fs::remove_file(repo.path().join("skills/pdf/reference/forms.md")).unwrap();
    let moved = repo.commit("two");
    let installed = fixture.install(&skills).await.unwrap();

    assert_eq!(installed.updated, ["pdf"]);
    assert_eq!(installed.skills[0].commit, moved);
    assert_eq!(fixture.read("pdf/SKILL.md"), "# PDF v2\n");
    assert!(
        !fixture.exists("pdf/reference/forms.md"),
        "a file deleted upstream stayed"
    );
    let uploads = fixture.provider.take_uploads();
    assert!(uploads.iter().all(|path| !path.contains("docx")), "{uploads:?}");
    assert_eq!(fixture.read("docx/SKILL.md"), "# DOCX\n");
}

#[tokio::test]
async fn a_skill_no_longer_listed_is_pruned_and_other_directories_are_left_alone() {
    let repo = Repo::new();
    let fixture = Fixture::new();
    let pdf = repo.skill("pdf", Some("skills/pdf"), "main");
    let docx = repo.skill("docx", Some("skills/docx"), "main");
    fixture.install(&[pdf.clone(), docx]).await.unwrap();
    // Something the agent made in the skills directory: not ours to remove.
    std::fs::create_dir_all(fixture.provider.skills().join("mine")).unwrap();

    let installed = fixture.install(std::slice::from_ref(&pdf)).await.unwrap();

    assert_eq!(installed.pruned, ["docx"]);
    assert!(installed.updated.is_empty());
    assert!(!fixture.exists("docx"));
    assert!(fixture.exists("mine"));
    assert_eq!(fixture.read("pdf/SKILL.md"), "# PDF v1\n");

    let installed = fixture.install(&[]).await.unwrap();
    assert_eq!(installed.pruned, ["pdf"]);
    assert_eq!(fixture.listing(), [".trueforge-skills.json", "mine"]);
}

#[tokio::test]
async fn a_failing_skill_changes_nothing_in_the_sandbox() {
    let repo = Repo::new();
    let fixture = Fixture::new();
    fixture
        .install(&[repo.skill("pdf", Some("skills/pdf"), "main")])
        .await
        .unwrap();
    let before = fixture.listing();
    let record = fixture.read(".trueforge-skills.json");
    repo.write("skills/pdf/SKILL.md", "# PDF v2\n");
    repo.commit("two");
    fixture.provider.take_uploads();

    let error = fixture
        .install(&[
            repo.skill("pdf", Some("skills/pdf"), "main"),
            repo.skill("broken", Some("skills/pdf"), "no-such-branch"),
        ])
        .await
        .unwrap_err();

    assert!(matches!(error, SkillError::RefNotFound { .. }), "{error}");
    assert_eq!(fixture.provider.upload_count(), 0);
    assert_eq!(fixture.listing(), before);
    assert_eq!(fixture.read("pdf/SKILL.md"), "# PDF v1\n");
    assert_eq!(fixture.read(".trueforge-skills.json"), record);
}

// ---------------------------------------------------------------------------------------------------------
// Errors a user can act on.

#[tokio::test]
async fn a_missing_ref_is_named_in_the_error() {
    let repo = Repo::new();
    let fixture = Fixture::new();

    let error = fixture
        .install(&[repo.skill("pdf", Some("skills/pdf"), "v9")])
        .await
        .unwrap_err();
    assert!(matches!(error, SkillError::RefNotFound { .. }), "{error:?}");
    let message = error.to_string();
    assert!(
        message.starts_with(&format!(r#"Skill "pdf": ref "v9" not found in {}"#, repo.url())),
        "{message}"
    );

    // A full commit id the repository does not have.
    let missing = "0123456789abcdef0123456789abcdef01234567";
    let error = fixture
        .install(&[repo.skill("pdf", Some("skills/pdf"), missing)])
        .await
        .unwrap_err();
    assert!(matches!(error, SkillError::RefNotFound { .. }), "{error:?}");
    assert!(error.to_string().contains(missing));
    assert!(
        fixture.cache_entries().is_empty(),
        "left behind: {:?}",
        fixture.cache_entries()
    );
}

#[tokio::test]
async fn a_directory_without_skill_md_or_a_missing_path_is_refused() {
    let repo = Repo::new();
    let fixture = Fixture::new();

    let error = fixture
        .install(&[repo.skill("other", Some("other"), "main")])
        .await
        .unwrap_err();
    assert!(matches!(error, SkillError::MissingSkillMd { .. }), "{error:?}");
    assert!(error.to_string().contains("no SKILL.md"), "{error}");

    let error = fixture.install(&[repo.skill("root", None, "main")]).await.unwrap_err();
    assert!(matches!(error, SkillError::MissingSkillMd { .. }), "{error:?}");

    let error = fixture
        .install(&[repo.skill("gone", Some("skills/nothing"), "main")])
        .await
        .unwrap_err();
    assert!(matches!(error, SkillError::PathNotFound { .. }), "{error:?}");
    assert!(
        error.to_string().contains(r#"no directory "skills/nothing""#),
        "{error}"
    );

    // A path naming a file, not a directory.
    let error = fixture
        .install(&[repo.skill("readme", Some("README.md"), "main")])
        .await
        .unwrap_err();
    assert!(matches!(error, SkillError::PathNotFound { .. }), "{error:?}");

    // Nothing half-made: no cache entry, no work directory, nothing in the sandbox.
    assert!(fixture.cache_entries().is_empty(), "{:?}", fixture.cache_entries());
    assert!(fixture.listing().is_empty(), "{:?}", fixture.listing());
}

#[tokio::test]
async fn a_url_that_is_not_a_git_repository_is_refused() {
    let fixture = Fixture::new();
    let empty = tempfile::tempdir().unwrap();
    let file = empty.path().join("plain.txt");
    std::fs::write(&file, "just a file").unwrap();

    for url in [
        format!("file://{}", empty.path().display()),
        format!("file://{}", file.display()),
        format!("file://{}/missing", empty.path().display()),
    ] {
        for git_ref in ["main", "0123456789abcdef0123456789abcdef01234567"] {
            let skill = GitSkill {
                name: "x".to_owned(),
                url: url.clone(),
                path: None,
                git_ref: git_ref.to_owned(),
                description: "x".to_owned(),
            };
            let error = fixture.install(&[skill]).await.unwrap_err();
            assert!(
                matches!(error, SkillError::Unreachable { .. }),
                "{url} {git_ref}: {error:?}"
            );
            assert!(
                error.to_string().contains("cannot be read as a git repository"),
                "{error}"
            );
        }
    }
    assert!(fixture.cache_entries().is_empty(), "{:?}", fixture.cache_entries());
}

#[tokio::test]
async fn urls_other_than_https_are_refused_before_git_runs() {
    let repo = Repo::new();
    let mut fixture = Fixture::new();
    let marker = tempfile::tempdir().unwrap();
    let touched = marker.path().join("touched");
    let touch = touched.display().to_string();

    fixture.sources.allow_file_urls = false;
    let error = fixture
        .install(&[repo.skill("pdf", Some("skills/pdf"), "main")])
        .await
        .unwrap_err();
    assert!(matches!(error, SkillError::InvalidUrl { .. }), "{error:?}");
    assert!(error.to_string().contains("file:// URLs are turned off"), "{error}");

    fixture.sources.allow_file_urls = true;
    for url in [
        "ssh://git@github.com/o/r.git".to_owned(),
        "git@github.com:o/r.git".to_owned(),
        "git://github.com/o/r.git".to_owned(),
        "http://github.com/o/r.git".to_owned(),
        format!("ext::sh -c touch% {touch}"),
        format!("ext::touch {touch}"),
        format!("--upload-pack=touch {touch}"),
        format!("-uupload-pack=touch {touch}"),
        repo.path().display().to_string(),
        "https://user:token@github.com/o/r.git".to_owned(),
    ] {
        let skill = GitSkill {
            url: url.clone(),
            ..repo.skill("pdf", Some("skills/pdf"), "main")
        };
        let error = fixture.install(&[skill]).await.unwrap_err();
        assert!(matches!(error, SkillError::InvalidUrl { .. }), "{url}: {error:?}");
    }
    // A ref that git could read as an option.
    let error = fixture
        .install(&[repo.skill("pdf", Some("skills/pdf"), &format!("--upload-pack=touch {touch}"))])
        .await
        .unwrap_err();
    assert!(matches!(error, SkillError::InvalidRef { .. }), "{error:?}");
    assert!(!touched.exists(), "a command ran");
    assert!(
        fixture.cache_entries().is_empty(),
        "git ran: {:?}",
        fixture.cache_entries()
    );
}

#[tokio::test]
async fn paths_refs_and_names_that_could_escape_are_refused() {
    let repo = Repo::new();
    let fixture = Fixture::new();

    for path in [
        "../outside",
        "skills/../../x",
        "skills/./pdf",
        ".git",
        "skills/pdf/.git",
    ] {
        let error = fixture
            .install(&[repo.skill("pdf", Some(path), "main")])
            .await
            .unwrap_err();
        assert!(matches!(error, SkillError::InvalidPath { .. }), "{path}: {error:?}");
    }
    for git_ref in ["main..other", "../main", "-x"] {
        let error = fixture
            .install(&[repo.skill("pdf", Some("skills/pdf"), git_ref)])
            .await
            .unwrap_err();
        assert!(matches!(error, SkillError::InvalidRef { .. }), "{git_ref}: {error:?}");
    }
    for name in [".", "..", ".hidden", "a/b", "", ".trueforge-skills.json"] {
        let error = fixture
            .install(&[repo.skill(name, Some("skills/pdf"), "main")])
            .await
            .unwrap_err();
        assert!(matches!(error, SkillError::InvalidName { .. }), "{name:?}: {error:?}");
    }
    let error = fixture
        .install(&[
            repo.skill("pdf", Some("skills/pdf"), "main"),
            repo.skill("pdf", Some("skills/docx"), "main"),
        ])
        .await
        .unwrap_err();
    assert!(matches!(error, SkillError::DuplicateName { .. }), "{error:?}");
    assert!(fixture.listing().is_empty());
}

#[tokio::test]
async fn a_skill_over_the_size_limit_is_refused() {
    let repo = Repo::new();
    repo.write("skills/pdf/data.bin", &"x".repeat(4096));
    repo.commit("big");
    let mut fixture = Fixture::new();
    fixture.sources.max_bytes = 1024;

    let error = fixture
        .install(&[repo.skill("pdf", Some("skills/pdf"), "main")])
        .await
        .unwrap_err();

    assert!(matches!(error, SkillError::TooLarge { limit: 1024, .. }), "{error:?}");
    assert!(error.to_string().contains("limit of 1024 bytes"), "{error}");
    assert!(fixture.listing().is_empty());
    assert!(fixture.cache_entries().is_empty(), "{:?}", fixture.cache_entries());

    // The limit is per skill: the small one fits, and the large one fits a larger limit.
    fixture
        .install(&[repo.skill("docx", Some("skills/docx"), "main")])
        .await
        .unwrap();
    fixture.sources.max_bytes = 1024 * 1024;
    fixture
        .install(&[repo.skill("pdf", Some("skills/pdf"), "main")])
        .await
        .unwrap();
    assert_eq!(fixture.read("pdf/data.bin").len(), 4096);
}

#[tokio::test]
async fn symlinks_pointing_out_of_the_skill_are_not_followed() {
    let repo = Repo::new();
    let link = |target: &str, at: &str| std::os::unix::fs::symlink(target, repo.path().join(at)).unwrap();
    link("/etc/passwd", "skills/pdf/passwd");
    link("../../other/big.txt", "skills/pdf/escape.txt");
    link("../SKILL.md", "skills/pdf/reference/skill-link.md");
    link("reference", "skills/pdf/docs");
    std::fs::create_dir_all(repo.path().join("skills/evil")).unwrap();
    link("/etc", "skills/evil/dir");
    link("/etc", "skills/etc-link");
    repo.commit("links");
    let fixture = Fixture::new();

    let installed = fixture
        .install(&[repo.skill("pdf", Some("skills/pdf"), "main")])
        .await
        .unwrap();

    let mut skipped = installed.skills[0].skipped_links.clone();
    skipped.sort();
    assert_eq!(skipped, ["escape.txt", "passwd"]);
    assert!(!fixture.exists("pdf/passwd"));
    assert!(!fixture.exists("pdf/escape.txt"));
    // Links inside the skill are kept as links.
    let kept = fixture.provider.skills().join("pdf/reference/skill-link.md");
    assert_eq!(std::fs::read_link(&kept).unwrap(), Path::new("../SKILL.md"));
    assert_eq!(fixture.read("pdf/reference/skill-link.md"), "# PDF v1\n");
    assert_eq!(fixture.read("pdf/docs/forms.md"), "forms\n");
    // Nothing of /etc/passwd reached the sandbox.
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap();
    let first_line = passwd.lines().next().unwrap();
    assert!(!sandbox_contains(&fixture.provider.skills(), first_line));

    // A skill path that is itself a symlink is not a directory of the repository.
    let error = fixture
        .install(&[repo.skill("etc", Some("skills/etc-link"), "main")])
        .await
        .unwrap_err();
    assert!(matches!(error, SkillError::PathNotFound { .. }), "{error:?}");
}

/// Whether any regular file under `root` contains `needle` (symlinks are not followed).
fn sandbox_contains(root: &Path, needle: &str) -> bool {
    let mut found = Vec::new();
    walk(root, root, &mut found);
    found.iter().any(|rel| {
        let path = root.join(rel);
        path.symlink_metadata().unwrap().is_file()
            && std::fs::read_to_string(&path).unwrap_or_default().contains(needle)
    })
}

#[tokio::test]
async fn the_git_credentials_file_never_reaches_the_sandbox() {
    let repo = Repo::new();
    let mut fixture = Fixture::new();
    let secrets = tempfile::tempdir().unwrap();
    let credentials = secrets.path().join("git credentials");
    std::fs::write(&credentials, "https://bot:s3cr3t-t0ken@git.example.org\n").unwrap();
    fixture.sources.git_credentials = Some(credentials.clone());

    let installed = fixture
        .install(&[repo.skill("pdf", Some("skills/pdf"), "main")])
        .await
        .unwrap();

    assert_eq!(installed.skills.len(), 1);
    let uploads = fixture.provider.take_uploads();
    assert!(uploads.iter().all(|path| !path.contains("credentials")), "{uploads:?}");
    let sandbox_root = fixture.provider.skills().parent().unwrap().to_path_buf();
    assert!(!sandbox_contains(&sandbox_root, "s3cr3t-t0ken"));
    assert!(!sandbox_contains(&sandbox_root, "git.example.org"));
    // The file is read, never changed.
    assert_eq!(
        std::fs::read_to_string(&credentials).unwrap(),
        "https://bot:s3cr3t-t0ken@git.example.org\n"
    );
}

#[tokio::test]
async fn a_git_call_past_its_time_is_killed() {
    // Accepts one connection and never answers: the TLS handshake waits forever. The connection ends
    // only when the process holding it (git's https helper, not git itself) is gone.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let closed = tokio::spawn(async move {
        use tokio::io::AsyncReadExt;
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut buffer = [0u8; 4096];
        while socket.read(&mut buffer).await.unwrap_or(0) > 0 {}
        std::time::Instant::now()
    });
    let mut fixture = Fixture::new();
    fixture.sources.timeout = Duration::from_secs(2);
    let skill = GitSkill {
        name: "slow".to_owned(),
        url: format!("https://127.0.0.1:{port}/o/r.git"),
        path: None,
        git_ref: "main".to_owned(),
        description: "x".to_owned(),
    };

    let started = std::time::Instant::now();
    let error = fetch_skill(&fixture.sources, &skill).await.unwrap_err();

    assert!(matches!(error, SkillError::Timeout { seconds: 2, .. }), "{error:?}");
    let failed = std::time::Instant::now();
    assert!(failed - started < Duration::from_secs(20), "{:?}", failed - started);
    let closed = tokio::time::timeout(Duration::from_secs(10), closed)
        .await
        .expect("git's helper still holds the connection")
        .unwrap();
    assert!(closed.duration_since(started) < Duration::from_secs(10));
}

#[tokio::test]
async fn concurrent_fetches_of_one_commit_share_one_cache_entry() {
    let repo = Repo::new();
    let fixture = Fixture::new();
    let skill = repo.skill("pdf", Some("skills/pdf"), "main");

    let (a, b, c) = tokio::join!(
        fetch_skill(&fixture.sources, &skill),
        fetch_skill(&fixture.sources, &skill),
        fetch_skill(&fixture.sources, &skill),
    );

    let (a, b, c) = (a.unwrap(), b.unwrap(), c.unwrap());
    assert_eq!(a.dir, b.dir);
    assert_eq!(a.dir, c.dir);
    assert_eq!(std::fs::read_to_string(a.dir.join("SKILL.md")).unwrap(), "# PDF v1\n");
    assert_eq!(fixture.cache_entries().len(), 1, "{:?}", fixture.cache_entries());
}

#[tokio::test]
async fn the_prompt_lists_installed_skills_by_name_description_and_path() {
    let repo = Repo::new();
    let fixture = Fixture::new();
    let skills = [repo.skill("pdf", Some("skills/pdf"), "main")];
    let installed = fixture.install(&skills).await.unwrap();

    let section = skills_prompt_section(&fixture.provider.layout, &skills);

    assert!(section.contains("name: pdf\n"), "{section}");
    assert!(section.contains("description: The pdf skill.\n"), "{section}");
    assert!(
        section.contains(&format!("path: {}\n", installed.skills[0].path)),
        "{section}"
    );
    assert!(section.contains("SKILL.md"));
    assert!(!section.contains("PDF v1"), "skill content was inlined");
    assert!(!section.contains(&repo.url()), "the URL was shown");
}

#[tokio::test]
async fn work_directories_left_by_a_dead_fetch_are_swept() {
    let repo = Repo::new();
    let fixture = Fixture::new();
    let stale = fixture.sources.cache_dir.join(".tmp-stale");
    let fresh = fixture.sources.cache_dir.join(".tmp-running");
    std::fs::create_dir_all(stale.join("half")).unwrap();
    std::fs::create_dir_all(&fresh).unwrap();
    let an_hour_ago = std::time::SystemTime::now() - Duration::from_secs(3600);
    std::fs::File::open(&stale).unwrap().set_modified(an_hour_ago).unwrap();

    fixture
        .install(&[repo.skill("pdf", Some("skills/pdf"), "main")])
        .await
        .unwrap();

    assert!(!stale.exists(), "a dead fetch's directory stayed");
    assert!(fresh.exists(), "a running fetch's directory was removed");
}
