-- The issues a merge request closes when it is merged (GitLab's
-- `merge_requests_closing_issues`): read from its description (`Closes #4`) whenever the
-- description changes, so an issue's `closed_by` is one indexed read.

CREATE TABLE merge_request_closing_issues (
    tenant_id BIGINT NOT NULL,
    merge_request_id BIGINT NOT NULL,
    issue_id BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, merge_request_id, issue_id),
    FOREIGN KEY (tenant_id, merge_request_id) REFERENCES merge_requests (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, issue_id) REFERENCES issues (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX merge_request_closing_issues_issue ON merge_request_closing_issues (tenant_id, issue_id, merge_request_id);
