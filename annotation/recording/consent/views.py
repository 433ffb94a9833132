"""The consent pages: a person's own (read the text, tick scopes, withdraw), and the admins' list of
people with withdrawal on a person's behalf (the lineage report follows, `ml.jobs.lineage`)."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Q
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from annotation.recording.consent.models import SCOPE_LABELS, SCOPES, ConsentRecord, ConsentText
from annotation.recording.consent.workflows import ConsentProblem, give_consent, withdraw_consent
from webapp.http import StudioRequest
from webapp.models import User
from webapp.roles import Role, role_required


class ConsentForm(forms.Form):
    """The scopes a person ticks, and the text version they read (hidden; checked on save)."""

    text_version = forms.IntegerField(widget=forms.HiddenInput)
    scopes = forms.MultipleChoiceField(
        choices=[(scope, SCOPE_LABELS[scope]) for scope in SCOPES],
        widget=forms.CheckboxSelectMultiple,
        required=False,
        label="I allow my recordings and judgements to be used for",
    )


class WithdrawForBehalfForm(forms.Form):
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), label="Why (for the record)")


def _next_url(request: StudioRequest) -> str | None:
    wanted = request.POST.get("next") or request.GET.get("next") or ""
    if wanted and url_has_allowed_host_and_scheme(wanted, allowed_hosts={request.get_host()}):
        return wanted
    return None


@login_required
def my_consent(request: StudioRequest) -> HttpResponse:
    """The person's consent: the current text with scope checkboxes, what is in force, withdrawal."""
    text = ConsentText.current()
    current = ConsentRecord.objects.current().filter(person=request.user).select_related("text").first()
    initial_scopes = current.scopes if current is not None and not current.withdrawn else []
    form = ConsentForm(initial={"text_version": text.version, "scopes": initial_scopes})
    status = 200
    if request.method == "POST" and request.POST.get("action") == "withdraw":
        try:
            withdraw_consent(request.user, by=request.user)
        except ConsentProblem as problem:
            messages.error(request, str(problem))
        else:
            messages.success(request, "Your consent is withdrawn: your recordings leave every new use.")
        return redirect("annotation:my_consent")
    if request.method == "POST":
        form = ConsentForm(request.POST)
        if form.is_valid():
            try:
                give_consent(request.user, form.cleaned_data["scopes"], form.cleaned_data["text_version"])
            except ConsentProblem as problem:
                form.add_error(None, str(problem))
            else:
                messages.success(request, "Thank you: your consent is recorded.")
                return redirect(_next_url(request) or "annotation:my_consent")
        status = 400
    return render(
        request,
        "annotation/recording/consent.html",
        {
            "text": text,
            "form": form,
            "current": current,
            "history": ConsentRecord.objects.filter(person=request.user).select_related("text"),
            "next": _next_url(request) or "",
        },
        status=status,
    )


@role_required(Role.ADMIN)
def consent_people(request: StudioRequest) -> HttpResponse:
    """Everyone who may contribute (every active account) and everyone with a take, with what is
    in force, for admins."""
    current = {
        record.person_id: record
        for record in ConsentRecord.objects.current().select_related("text", "person")
    }
    people = User.objects.filter(Q(is_active=True) | Q(takes__isnull=False)).distinct()
    rows = [(person, current.get(person.pk)) for person in people.order_by("username")]
    return render(
        request,
        "annotation/recording/consent_people.html",
        {"rows": rows},
    )


@role_required(Role.ADMIN)
@require_POST
def withdraw_for(request: StudioRequest, user_id: int) -> HttpResponse:
    """Withdraw a person's consent on their behalf (a reason is required); then their lineage report."""
    person = get_object_or_404(User, pk=user_id)
    form = WithdrawForBehalfForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Say why you withdraw this person's consent on their behalf.")
        return redirect("annotation:consent_people")
    try:
        withdraw_consent(person, by=request.user, reason=form.cleaned_data["reason"])
    except ConsentProblem as problem:
        messages.error(request, str(problem))
        return redirect("annotation:consent_people")
    messages.success(request, f"{person.get_username()}'s consent is withdrawn. What used their work before:")
    return redirect("ml:person_lineage", user_id=person.pk)
