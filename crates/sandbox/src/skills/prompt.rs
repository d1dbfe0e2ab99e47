//! The part of the system prompt that tells the agent which skills it has. Only names, descriptions and
//! directories are listed; the agent opens a skill's `SKILL.md` when it decides to use it, so the prompt
//! stays small however many skills are installed.

use super::GitSkill;
use super::check::is_valid_name;
use crate::SandboxLayout;

/// The `<skills>` section for `skills` installed in `layout`'s skills directory; empty when there are
/// none. Skills whose names could not have been installed are left out.
pub fn skills_prompt_section(layout: &SandboxLayout, skills: &[GitSkill]) -> String {
    let listed: Vec<&GitSkill> = skills.iter().filter(|skill| is_valid_name(&skill.name)).collect();
    if listed.is_empty() {
        return String::new();
    }
    let base = layout.skills.trim_end_matches('/');
    let mut section = String::from(
        "<skills>\n\
         The sandbox has skills installed: directories with instructions (and often scripts or reference \
         files) for particular kinds of work. Only each skill's name, description and directory are shown here.\n\
         - Use the description to decide whether a skill fits the task at hand.\n\
         - Before using a skill, read its SKILL.md file (in the skill's directory) in full and follow it.\n\
         - Open a skill's other files only when its SKILL.md points to them; there is no need to list skill directories.\n",
    );
    for skill in listed {
        section.push_str(&format!(
            "<skill>\nname: {}\ndescription: {}\npath: {base}/{}\n</skill>\n",
            skill.name,
            skill.description.trim(),
            skill.name
        ));
    }
    section.push_str("</skills>");
    section
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout() -> SandboxLayout {
        SandboxLayout {
            workspace: "/w".to_owned(),
            uploads: "/w/uploads".to_owned(),
            tool_results: "/w/results".to_owned(),
            skills: "/opt/skills/".to_owned(),
        }
    }

    fn skill(name: &str) -> GitSkill {
        GitSkill {
            name: name.to_owned(),
            url: "https://github.com/o/r".to_owned(),
            path: Some("skills/x".to_owned()),
            git_ref: "main".to_owned(),
            description: " Makes PDFs. ".to_owned(),
        }
    }

    #[test]
    fn lists_name_description_and_path_only() {
        let section = skills_prompt_section(&layout(), &[skill("pdf"), skill("../bad")]);
        assert!(section.starts_with("<skills>\n"));
        assert!(section.ends_with("</skills>"));
        assert!(section.contains("<skill>\nname: pdf\ndescription: Makes PDFs.\npath: /opt/skills/pdf\n</skill>\n"));
        assert!(section.contains("SKILL.md"));
        assert!(!section.contains("bad"));
        assert!(!section.contains("github.com"));
        assert_eq!(skills_prompt_section(&layout(), &[]), "");
    }
}
