// Where the UI points a user for more than a page can say: sections of the project's README. One place,
// so a fork or a move of the repository changes one line.

const README = "https://github.com/flamewatch/flamewatch/blob/main/README.md";

export const DOCS = {
  oomKills: `${README}#oom-kills`,
};
