"""The CDK app: ``python -m infra.app`` (or ``cdk synth``) writes the cloud assembly.

Synth is offline: no AWS credentials, no Docker, no network. The stack is
environment-agnostic; ``cdk deploy`` picks the account and region from the caller.
"""

from __future__ import annotations

import os
from typing import Any

from aws_cdk import App, Tags, Validations
from cdk_nag import AwsSolutionsChecks

from infra import names
from infra.constants import SERVICE_NAME, STACK_NAME
from infra.stack import SnapledgerStack, SourcePaths

# Feature flags this app is written against (cdk.json or -c values take precedence).
FEATURE_FLAGS: dict[str, Any] = {
    "@aws-cdk/aws-iam:minimizePolicies": True,
    "@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy": True,
    "@aws-cdk/aws-s3:createDefaultLoggingPolicy": True,
    "@aws-cdk/aws-lambda:recognizeLayerVersion": True,
    "@aws-cdk/aws-iam:standardizedServicePrincipals": True,
}


def build_app(
    context: dict[str, Any] | None = None,
    outdir: str | None = None,
    sources: SourcePaths | None = None,
) -> tuple[App, SnapledgerStack]:
    """The app with its one stack; cdk-nag's AwsSolutions pack validates it at synth."""
    app = App(
        context={**FEATURE_FLAGS, **(context or {})},
        outdir=outdir or os.environ.get("CDK_OUTDIR") or str(names.REPO_ROOT / "cdk.out"),
    )
    stack = SnapledgerStack(app, STACK_NAME, sources=sources)
    Tags.of(app).add("project", SERVICE_NAME)
    Validations.of(app).add_plugins(AwsSolutionsChecks(app, verbose=True))
    return app, stack


def main() -> None:
    app, _ = build_app()
    app.synth()


if __name__ == "__main__":
    main()
