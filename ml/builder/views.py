"""The builder's taxonomy page: domains, subcategories and topics at a glance, a JSONL import, one topic added by hand.

Admins only (``BUILDER_ROLES``); single topics are edited (renamed, retired) in Django admin.
"""

from __future__ import annotations

import json

from django import forms
from django.contrib import messages
from django.db.models import Count, Q
from django.http import HttpResponse
from django.shortcuts import redirect, render

from annotation.recording.item_import import FileProblem, text_lines
from ml.builder.access import BUILDER_ROLES
from ml.builder.models import TaxonomyDomain, TaxonomySubcategory
from ml.builder.taxonomy_import import TaxonomyRefused, import_taxonomy
from webapp.http import StudioRequest
from webapp.roles import role_required

MAX_UPLOAD_BYTES = 20 * 1024 * 1024


class TaxonomyUploadForm(forms.Form):
    file = forms.FileField(
        help_text='JSONL, one topic a line: {"domain": ..., "subcategory": ..., "topic": ...}'
    )


class TopicForm(forms.Form):
    domain = forms.CharField(max_length=120)
    subcategory = forms.CharField(max_length=120)
    topic = forms.CharField(max_length=300)


@role_required(*BUILDER_ROLES)
def taxonomy_page(request: StudioRequest) -> HttpResponse:
    """Show the taxonomy; import a file (all of it or none) or add one topic."""
    upload, single = TaxonomyUploadForm(), TopicForm()
    if request.method == "POST":
        if "file" in request.FILES:
            upload = TaxonomyUploadForm(request.POST, request.FILES)
            if upload.is_valid():
                stored = upload.cleaned_data["file"]
                try:
                    if stored.size > MAX_UPLOAD_BYTES:
                        raise FileProblem(
                            f"The file is larger than {MAX_UPLOAD_BYTES // 2**20} MiB; split it."
                        )
                    result = import_taxonomy(text_lines(stored.file))
                except (TaxonomyRefused, FileProblem) as exc:
                    problems = exc.problems if isinstance(exc, TaxonomyRefused) else [str(exc)]
                    upload.add_error("file", ["Nothing was imported.", *problems[:20]])
                else:
                    messages.success(
                        request,
                        f"Imported: {result.created} topics created, {result.updated} updated, {result.unchanged} unchanged.",
                    )
                    return redirect("ml:builder_taxonomy")
        else:
            single = TopicForm(request.POST)
            if single.is_valid():
                line = {key: single.cleaned_data[key] for key in ("domain", "subcategory", "topic")}
                result = import_taxonomy([json.dumps(line)])
                messages.success(
                    request, "Topic added." if result.created else "That topic was already there."
                )
                return redirect("ml:builder_taxonomy")
    domains = TaxonomyDomain.objects.annotate(
        topic_count=Count("subcategories__topics"),
        active_count=Count("subcategories__topics", filter=Q(subcategories__topics__active=True)),
    ).order_by("name")
    subcategories = TaxonomySubcategory.objects.select_related("domain").annotate(
        topic_count=Count("topics"), active_count=Count("topics", filter=Q(topics__active=True))
    )
    return render(
        request,
        "ml/builder/taxonomy.html",
        {"domains": domains, "subcategories": subcategories, "upload": upload, "single": single},
    )
