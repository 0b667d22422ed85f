//! The README a new project starts with when `initialize_with_readme` is set.

/// The project's name as title and GitLab's getting-started text.
pub fn readme(name: &str) -> String {
    format!(
        "# {name}\n\n\n\n## Getting started\n\n\
To make it easy for you to get started with GitLab, here's a list of recommended next steps.\n\n\
Already a pro? Just edit this README.md and make it your own. Want to make it easy? \
[Use the template at the bottom](#editing-this-readme)!\n\n\
## Add your files\n\n\
- [ ] [Create](https://docs.gitlab.com/ee/user/project/repository/web_editor.html#create-a-file) \
or [upload](https://docs.gitlab.com/ee/user/project/repository/web_editor.html#upload-a-file) files\n\
- [ ] [Add files using the command line](https://docs.gitlab.com/ee/gitlab-basics/add-file.html#add-a-file-using-the-command-line) \
or push an existing Git repository with the following command:\n\n\
## Name\nChoose a self-explaining name for your project.\n\n\
## Description\nLet people know what your project can do specifically.\n\n\
## License\nFor open source projects, say how it is licensed.\n"
    )
}
